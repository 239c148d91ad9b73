package adaptive_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// TestReviewSeams9_TransportGroupCancelIsIgnored pins a defect of
// adaptive.Transport under a group (or any ctx cancelled with a cause): the
// group's first failure cancels its ctx with that failure as the cause, and
// net/http fails each request in flight with context.Cause(ctx), not
// context.Canceled. Transport finished their Tickets as overload failures,
// so the limit fell (AIMD halves it for each) though the service had
// answered nothing: the caller gave up. A request whose ctx was cancelled,
// whatever its cause, is finished as by Ignore, and leaves the limit alone.
func TestReviewSeams9_TransportGroupCancelIsIgnored(t *testing.T) {
	const slow = 20 // a window of the estimator: 20 samples
	arrived := make(chan struct{}, slow)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done() // answers only when the client gives up
	}))
	defer srv.Close()
	conns := &http.Transport{}
	defer conns.CloseIdleConnections()
	// Each reading of the clock is 10 ms after the last, so that the
	// window of the 20 requests' ends lasts its 100 ms and closes.
	var now atomic.Int64
	l := adaptive.New(adaptive.Config{
		Algorithm: adaptive.AIMD, InitialLimit: 32, MinLimit: 1, MaxLimit: 32,
		Clock: func() time.Duration { return time.Duration(now.Add(int64(10 * time.Millisecond))) },
	})
	client := &http.Client{Transport: &adaptive.Transport{Base: conns, Limiter: l}}

	errBad := errors.New("a task failed")
	g, _ := group.New(context.Background(), group.Options{})
	for range slow {
		_ = g.Go(func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return nil
		})
	}
	_ = g.Go(func(context.Context) error {
		for range slow {
			<-arrived // every request is in flight
		}
		return errBad
	})
	if err := g.Wait(); !errors.Is(err, errBad) {
		t.Fatalf("Wait() = %v, want %v", err, errBad)
	}
	if got := l.InFlight(); got != 0 {
		t.Fatalf("InFlight() = %d after every request returned, want 0", got)
	}
	if got := l.Limit(); got != 32 {
		t.Fatalf("Limit() = %d after the group gave up on its requests, want 32: a cancelled request is no overload", got)
	}
}

// TestReviewSeams9_MiddlewareOverAPerClientLimit pins a defect of
// adaptive.Middleware in front of ratelimit.Middleware, a per-client limit:
// the 429 that the rate limit answers a client over its quota says that
// client sends too much (RFC 6585), not that the service is overloaded, yet
// Middleware finished its Ticket as an overload failure. One greedy client
// at twice its quota, a twentieth of the traffic, drove the limit from 20 to
// 1 in seconds, for a service whose latency never moved, and the others'
// requests were shed with 503. A 429 of the handler leaves the limit alone.
func TestReviewSeams9_MiddlewareOverAPerClientLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := adaptive.New(adaptive.Config{InitialLimit: 20, MaxLimit: 40})
		perClient := ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket {
			return ratelimit.NewTokenBucket(20, 5)
		}, ratelimit.KeyedConfig{})
		quota := ratelimit.Middleware(perClient, ratelimit.MiddlewareConfig{
			Key: func(r *http.Request) string { return r.Header.Get("X-Client") },
		})
		app := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			time.Sleep(10 * time.Millisecond) // the service: always as fast
		})
		h := adaptive.Middleware(lim)(quota(app))

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		client := func(name string, every time.Duration) {
			for ctx.Err() == nil {
				req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
				req.Header.Set("X-Client", name)
				h.ServeHTTP(httptest.NewRecorder(), req)
				time.Sleep(every)
			}
		}
		for c := range 10 {
			wg.Go(func() { client(strconv.Itoa(c), 90*time.Millisecond) }) // about 10 a second: within quota
		}
		wg.Go(func() { client("greedy", 20*time.Millisecond) }) // about 33 a second: past its 20
		wg.Wait()
		if got := lim.Limit(); got < 10 {
			t.Errorf("Limit() = %d after a client went past its quota, want about 20: the service never slowed (%d requests shed)", got, lim.Shed())
		}
	})
}

// TestReviewSeams9_TransportOverABreaker pins a defect of adaptive.Transport
// over breaker.Transport: a request that the breaker refuses never reached
// the service, yet Transport finished its Ticket with the refusal, an
// overload failure, and each window of refusals cut the limit (AIMD: by a
// tenth), so that the service, once back, found its clients throttled to a
// limit that had fallen while it was not even called. And Transport hid the
// breaker's Precheck from a ratelimit.Transport in front of it, which then
// spent an event of its limit on each request the breaker would refuse. A
// refused request takes no Ticket and no event, and leaves the limit alone:
// Transport asks Base's Precheck first, and has one, as ratelimit.Transport
// does.
func TestReviewSeams9_TransportOverABreaker(t *testing.T) {
	var now atomic.Int64
	l := adaptive.New(adaptive.Config{
		Algorithm: adaptive.AIMD, InitialLimit: 16, MinLimit: 1, MaxLimit: 16,
		Clock: func() time.Duration { return time.Duration(now.Add(int64(10 * time.Millisecond))) },
	})
	br := &breaker.Transport{Base: rtFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Body: http.NoBody, Request: r}, nil
	})}
	var tally ratelimit.Tally
	client := &http.Client{Transport: &ratelimit.Transport{
		Base:    &adaptive.Transport{Base: br, Limiter: l},
		Limiter: tally.Wrap(ratelimit.NewTokenBucket(1e6, 1000)),
	}}
	get := func() error {
		resp, err := client.Get("http://svc.example/x")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	if err := get(); err != nil {
		t.Fatal(err)
	}
	br.Breaker("svc.example").ForceOpen()
	waited := tally.Counts().Waited
	for range 60 {
		if err := get(); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("request to an open breaker = %v, want ErrOpen", err)
		}
	}
	if got := l.Limit(); got != 16 {
		t.Errorf("Limit() = %d after 60 requests the breaker refused, want 16: none reached the service", got)
	}
	if got := tally.Counts().Waited - waited; got != 0 {
		t.Errorf("the rate limit in front spent %d events on requests the breaker refused, want 0", got)
	}
	if got := l.InFlight(); got != 0 {
		t.Errorf("InFlight() = %d, want 0", got)
	}
}
