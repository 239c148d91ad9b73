package pool_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/pool"
)

// Seams that hold: a pool whose Config.Breaker is half-open, so that the
// New it runs is the breaker's one trial call. However that New ends, the
// trial slot is not kept, and the breaker goes on deciding.

// halfOpenBreaker returns a breaker that two failures opened for a second,
// and waits out that second: its next call is a trial.
func halfOpenBreaker(t *testing.T) *breaker.Breaker {
	t.Helper()
	b := breaker.New(breaker.Settings{FailureThreshold: 2, OpenTimeout: time.Second})
	for range 2 {
		_ = b.Execute(context.Background(), func(context.Context) error { return errors.New("down") })
	}
	if s := b.State(); s != breaker.Open {
		t.Fatalf("state after two failures = %v, want open", s)
	}
	time.Sleep(time.Second)
	return b
}

// TestReviewNu12CloseDuringTrialGivesTheSlotBack: Close cancels the New
// under way, which returns its ctx's context.Canceled: the breaker ignores
// it and frees its trial slot, so that the next call (of another pool on the
// same breaker, say) is let through as the trial, not refused for a trial
// that nobody runs any more.
func TestReviewNu12CloseDuringTrialGivesTheSlotBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := halfOpenBreaker(t)
		p, err := pool.New(pool.Config[int]{MaxSize: 1, Breaker: b, New: func(ctx context.Context) (int, error) {
			<-ctx.Done() // a backend that hangs until the pool gives up on it
			return 0, ctx.Err()
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if _, err := p.Acquire(ctx); err != context.DeadlineExceeded {
			t.Fatalf("Acquire = %v, want %v", err, context.DeadlineExceeded)
		}
		if err := p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := b.Execute(context.Background(), func(context.Context) error { return nil }); err != nil {
			t.Fatalf("the trial after the pool closed: Execute = %v, want nil (state %v)", err, b.State())
		}
		if s := b.State(); s != breaker.Closed {
			t.Fatalf("state after a successful trial = %v, want closed", s)
		}
	})
}

// TestReviewNu12TrialNewThatDoesNotReturn: a trial New that panics or calls
// runtime.Goexit is a failed trial: the breaker opens again, the Acquire
// gets the panic or an error, and once the breaker lets a trial through
// again, a New that works closes it and the pool serves.
func TestReviewNu12TrialNewThatDoesNotReturn(t *testing.T) {
	for _, how := range []string{"panic", "Goexit"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := halfOpenBreaker(t)
				var calls atomic.Int32
				p, err := pool.New(pool.Config[int]{MaxSize: 1, Breaker: b, New: func(context.Context) (int, error) {
					if calls.Add(1) == 1 {
						if how == "Goexit" {
							runtime.Goexit()
						}
						panic("the driver panics")
					}
					return 1, nil
				}})
				if err != nil {
					t.Fatal(err)
				}
				func() {
					defer func() { _ = recover() }()
					if _, err := p.Acquire(context.Background()); err == nil {
						t.Error("Acquire succeeded with a New that did not return")
					}
				}()
				if s := b.State(); s != breaker.Open {
					t.Fatalf("state after the trial's %s = %v, want open", how, s)
				}
				if s := p.Stats(); s.Total != 0 || s.Constructing != 0 {
					t.Fatalf("stats after the trial's %s: %+v, want nothing held", how, s)
				}
				time.Sleep(2 * time.Second) // past the second opening's OpenTimeout
				r, err := p.Acquire(context.Background())
				if err != nil {
					t.Fatalf("Acquire after the breaker let a trial through again = %v (state %v)", err, b.State())
				}
				r.Release()
				if s := b.State(); s != breaker.Closed {
					t.Fatalf("state after a New that worked = %v, want closed", s)
				}
				if err := p.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
