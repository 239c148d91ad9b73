package retry_test

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/retry"
)

// ownDoneCtx is a ctx of the caller's own type, with a Done channel of its
// own: the context package cannot find a cancelCtx behind it, and a ctx made
// from it runs a goroutine until one of the two ends.
type ownDoneCtx struct {
	context.Context
	done chan struct{}
}

func (c ownDoneCtx) Done() <-chan struct{} { return c.done }

func (c ownDoneCtx) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// A first attempt that panics or calls runtime.Goexit ends DoHedged on its
// way; the ctx DoHedged made from the caller's ends with it, and leaves no
// goroutine behind: for a ctx of the caller's own type, the context package
// watches it from a goroutine made by the caller's, until one of them ends.
func TestDoHedgedFirstAttemptPanicOrGoexitReleasesCtx(t *testing.T) {
	for _, how := range []string{"panic", "Goexit"} {
		t.Run(how, func(t *testing.T) {
			ctx := ownDoneCtx{Context: context.Background(), done: make(chan struct{})}
			defer close(ctx.done)
			h := retry.Hedge{Delay: time.Hour, Budget: retry.NewBudget(1, 1)}
			caller := make(chan string, 1)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { _ = recover() }()
				caller <- goroutineID()
				_, _ = retry.DoHedged(ctx, h, func(context.Context) (int, error) {
					if how == "panic" {
						panic("boom")
					}
					runtime.Goexit()
					return 0, nil
				})
				t.Errorf("DoHedged returned after its first attempt's %s", how)
			}()
			wg.Wait()
			// The watcher ends soon after its ctx is cancelled: wait for
			// that, within reason, before calling it left behind.
			watcher := "created by context.(*cancelCtx).propagateCancel in goroutine " + <-caller + "\n"
			for i := 0; ; i++ {
				buf := make([]byte, 1<<20)
				if !strings.Contains(string(buf[:runtime.Stack(buf, true)]), watcher) {
					break
				}
				if i == 500 {
					t.Fatalf("a goroutine watching the caller's ctx outlives a DoHedged whose first attempt's %s ended it", how)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// goroutineID returns the id of the calling goroutine, as runtime.Stack
// names it.
func goroutineID() string {
	buf := make([]byte, 64)
	f := strings.Fields(string(buf[:runtime.Stack(buf, false)]))
	return f[1] // "goroutine 7 [running]:"
}

// A copy that calls runtime.Goexit (t.FailNow in a test's fn) ended only its
// own goroutine: the caller, in another, gets it as a failure of that copy,
// ctxsync.ErrGoexit, not a panic with nil.
func TestDoHedgedCopyGoexitIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := retry.Hedge{Delay: time.Millisecond, Budget: retry.NewBudget(1, 10)}
		first := make(chan struct{})
		copyDone := make(chan struct{})
		v, err := func() (v int, err error) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("DoHedged panicked with %v (%T) after a copy called runtime.Goexit", r, r)
				}
			}()
			return retry.DoHedged(context.Background(), h, func(ctx context.Context) (int, error) {
				select {
				case <-first:
					defer close(copyDone)
					runtime.Goexit()
				default:
					close(first)
				}
				<-copyDone // the first attempt fails once the copy has ended
				return 1, errors.New("first attempt failed")
			})
		}()
		if err == nil || !errors.Is(err, ctxsync.ErrGoexit) && err.Error() != "first attempt failed" {
			t.Fatalf("DoHedged = %v, %v; want a failure: the first attempt's, or the copy's ctxsync.ErrGoexit", v, err)
		}
	})
}

// A copy that calls runtime.Goexit while the first attempt is in flight is
// a failed copy: the first attempt goes on, and its success is the answer.
func TestDoHedgedCopyGoexitFirstWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := retry.Hedge{Delay: time.Millisecond, Budget: retry.NewBudget(1, 10)}
		first := make(chan struct{})
		copyDone := make(chan struct{})
		v, err := retry.DoHedged(context.Background(), h, func(ctx context.Context) (int, error) {
			select {
			case <-first:
				defer close(copyDone)
				runtime.Goexit()
			default:
				close(first)
			}
			<-copyDone
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 7, nil
		})
		if v != 7 || err != nil {
			t.Fatalf("DoHedged = %v, %v; want 7, nil: the copy that called runtime.Goexit failed, the first attempt succeeded", v, err)
		}
	})
}

// Under a hedging Transport, a copy whose Base calls runtime.Goexit has
// failed: the first attempt's response is the answer, and the caller of
// RoundTrip does not panic.
func TestTransportHedgeCopyGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first := make(chan struct{})
		copyDone := make(chan struct{})
		tr := &retry.Transport{
			Policy: retry.Policy{MaxAttempts: 1},
			Hedge:  &retry.Hedge{Delay: time.Millisecond, Budget: retry.NewBudget(1, 10)},
			Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				select {
				case <-first:
					defer close(copyDone)
					runtime.Goexit()
				default:
					close(first)
				}
				<-copyDone
				return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
			}),
		}
		req, _ := http.NewRequest(http.MethodGet, "http://example.test/", nil)
		resp, err := func() (resp *http.Response, err error) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("RoundTrip panicked with %v (%T) after a copy's Base called runtime.Goexit", r, r)
				}
			}()
			return tr.RoundTrip(req)
		}()
		if err != nil || resp == nil || resp.StatusCode != 200 {
			t.Fatalf("RoundTrip = %v, %v; want the first attempt's 200", resp, err)
		}
		_ = resp.Body.Close()
	})
}
