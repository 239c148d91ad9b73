package adaptive_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/retry"
)

// TestSeams15_TransportClockPanicsClosesTheResponse: the Limiter's Clock is
// read as Transport finishes the request's Ticket, after Base has answered.
// If it panics, the panic goes on to the caller, who never sees the
// response: its body must be closed, so that its connection is not kept,
// as breaker.Transport does when its Settings' code panics then. The slot is
// given back either way.
func TestSeams15_TransportClockPanicsClosesTheResponse(t *testing.T) {
	for _, status := range []int{200, 503} {
		var reads atomic.Int64
		cfg := fixed(1, adaptive.NoWait)
		cfg.Clock = func() time.Duration {
			if reads.Add(1) > 1 { // the read at Acquire goes through; the one at Done panics
				panic("clock")
			}
			return 0
		}
		l := adaptive.New(cfg)
		body := &closeTracker{Reader: strings.NewReader("answer")}
		tr := &adaptive.Transport{Limiter: l, Base: rtFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Body: body}, nil
		})}
		req := httptest.NewRequest("GET", "http://x/", nil)
		req.RequestURI = ""
		mustPanic(t, "clock", func() { _, _ = tr.RoundTrip(req) })
		if reads.Load() < 2 {
			t.Fatalf("status %d: the Clock was read %d times; the Ticket was not timed", status, reads.Load())
		}
		if !body.closed {
			t.Errorf("status %d: the response nobody sees kept its body open", status)
		}
		if n := l.InFlight(); n != 0 {
			t.Errorf("status %d: InFlight %d after the panic, want 0", status, n)
		}
	}
	// Base's error: no response to close, the slot is given back.
	var reads atomic.Int64
	cfg := fixed(1, adaptive.NoWait)
	cfg.Clock = func() time.Duration {
		if reads.Add(1) > 1 {
			panic("clock")
		}
		return 0
	}
	l := adaptive.New(cfg)
	tr := &adaptive.Transport{Limiter: l, Base: rtFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("refused")
	})}
	req := httptest.NewRequest("GET", "http://x/", nil)
	req.RequestURI = ""
	mustPanic(t, "clock", func() { _, _ = tr.RoundTrip(req) })
	if n := l.InFlight(); n != 0 {
		t.Errorf("Base failed: InFlight %d after the panic, want 0", n)
	}
}

// TestSeams15_RetryOverLimiterHammer: retry.Do around Acquire and a call
// that fails, times out under AttemptTimeout, panics or succeeds, its
// Ticket finished with a defer, callers' ctxs ending at random: once
// everyone has returned, no slot is held and nobody is counted waiting, and
// a call is let through at once.
func TestSeams15_RetryOverLimiterHammer(t *testing.T) {
	for seed := range uint64(20) {
		synctest.Test(t, func(t *testing.T) {
			rnd := testutil.LockedRand(seed, 152)
			l := adaptive.New(adaptive.Config{InitialLimit: 3, MinLimit: 1, MaxLimit: 6, MaxWait: 2 * time.Millisecond})
			p := retry.Policy{MaxAttempts: 4, InitialDelay: 100 * time.Microsecond, MaxDelay: time.Millisecond, AttemptTimeout: 2 * time.Millisecond}
			errOverload := errors.New("overloaded")
			var wg sync.WaitGroup
			for range 12 {
				wg.Go(func() {
					for range 8 {
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rnd(int64(10*time.Millisecond))))
						func() {
							defer func() { _ = recover() }()
							_ = p.Execute(ctx, func(ctx context.Context) error {
								tk, err := l.Acquire(ctx)
								if err != nil {
									return err
								}
								finished := false
								defer func() {
									if !finished {
										tk.Ignore()
									}
								}()
								var cerr error
								switch rnd(5) {
								case 0:
									panic("call")
								case 1:
									<-ctx.Done()
									cerr = ctx.Err()
								case 2:
									cerr = errOverload
								default:
									time.Sleep(time.Duration(rnd(int64(time.Millisecond))))
								}
								finished = true
								if errors.Is(cerr, context.Canceled) {
									tk.Ignore()
								} else {
									tk.Done(cerr)
								}
								return cerr
							})
						}()
						cancel()
					}
				})
			}
			wg.Wait()
			if n, w := l.InFlight(), l.Waiting(); n != 0 || w != 0 {
				t.Fatalf("InFlight %d, Waiting %d after everyone returned", n, w)
			}
			tk, err := l.Acquire(context.Background())
			if err != nil {
				t.Fatalf("Acquire after everyone returned: %v", err)
			}
			tk.Ignore()
		})
	}
}
