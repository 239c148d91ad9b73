package pool_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/pool"
)

// TestRV15aNewLooksAtTheBreakerInEveryState: pool.New's look at
// Config.Breaker (is it made by breaker.New?) calls none of its Settings'
// functions and counts nothing, whatever the breaker's state: closed, open,
// open with its time up (a call would move it to half-open, and tell
// OnStateChange), half-open with its trial taken, forced open, disabled.
func TestRV15aNewLooksAtTheBreakerInEveryState(t *testing.T) {
	down := errors.New("down")
	fail := func(context.Context) error { return down }
	for name, setup := range map[string]func(*testing.T, *breaker.Breaker){
		"closed": func(*testing.T, *breaker.Breaker) {},
		"open":   func(_ *testing.T, b *breaker.Breaker) { _ = b.Execute(context.Background(), fail) },
		"open, time up": func(_ *testing.T, b *breaker.Breaker) {
			_ = b.Execute(context.Background(), fail)
			time.Sleep(time.Second)
		},
		"half-open, trial taken": func(t *testing.T, b *breaker.Breaker) {
			_ = b.Execute(context.Background(), fail)
			time.Sleep(time.Second)
			done, err := b.Allow(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { done(nil) })
		},
		"forced open": func(_ *testing.T, b *breaker.Breaker) { b.ForceOpen() },
		"disabled": func(_ *testing.T, b *breaker.Breaker) {
			b.Disable()
			_ = b.Execute(context.Background(), fail)
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var told atomic.Int64
				b := breaker.New(breaker.Settings{
					FailureThreshold: 1,
					OpenTimeout:      time.Second,
					OnCall:           func(breaker.CallEvent) { told.Add(1) },
					OnStateChange:    func(breaker.State, breaker.State, breaker.Counts) { told.Add(1) },
					IsFailure:        func(err error) bool { told.Add(1); return err != nil },
				})
				setup(t, b)
				synctest.Wait()
				before := told.Load()
				p, err := pool.New(pool.Config[int]{MaxSize: 1, Breaker: b, New: func(context.Context) (int, error) { return 1, nil }})
				if err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if n := told.Load() - before; n != 0 {
					t.Errorf("pool.New called the breaker's functions %d times", n)
				}
				counts, state := b.Counts(), b.State()
				_ = p.Close(context.Background())
				c2 := breaker.New(breaker.Settings{FailureThreshold: 1, OpenTimeout: time.Second})
				setup(t, c2)
				if want := c2.Counts(); counts != want || state != c2.State() {
					t.Errorf("after pool.New: %v %+v; a breaker left alone: %v %+v", state, counts, c2.State(), want)
				}
			})
		})
	}
}
