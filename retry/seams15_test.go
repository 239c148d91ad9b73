package retry_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/retry"
)

// retry.Do over breaker.Execute, attempts cut by AttemptTimeout and callers
// by their deadline, fns that fail, panic, call Goexit or succeed: each
// attempt is one breaker call (one fn run, or one refusal), each fn run is
// told to OnCall once, and no trial slot is kept: once everyone has left,
// a half-open breaker lets a call through.
func TestSeams15_RetryOverBreakerHammer(t *testing.T) {
	for seed := range uint64(30) {
		synctest.Test(t, func(t *testing.T) {
			rnd := testutil.LockedRand(seed, 151)
			var runs, told, refusedTold, attempts, refusals atomic.Int64
			b := breaker.New(breaker.Settings{
				FailureThreshold: 2,
				OpenTimeout:      20 * time.Millisecond,
				HalfOpenMaxCalls: 2,
				SuccessThreshold: 2,
				OnCall: func(e breaker.CallEvent) {
					if e.Outcome == breaker.Rejected {
						refusedTold.Add(1)
					} else {
						told.Add(1)
					}
				},
			})
			errDown := errors.New("down")
			p := retry.Policy{MaxAttempts: 4, InitialDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, AttemptTimeout: 4 * time.Millisecond}
			var wg sync.WaitGroup
			for range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 6 {
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rnd(int64(40*time.Millisecond))))
						done := make(chan struct{})
						go func() { // a goroutine of its own: fn may Goexit
							defer close(done)
							defer func() { _ = recover() }()
							_ = p.Execute(ctx, func(ctx context.Context) error {
								attempts.Add(1)
								err := b.Execute(ctx, func(ctx context.Context) error {
									runs.Add(1)
									switch rnd(6) {
									case 0:
										panic("boom")
									case 1:
										runtime.Goexit()
									case 2:
										<-ctx.Done() // held past AttemptTimeout
										return ctx.Err()
									case 3:
										return errDown
									}
									time.Sleep(time.Duration(rnd(int64(2 * time.Millisecond))))
									return nil
								})
								if errors.Is(err, breaker.ErrOpen) {
									refusals.Add(1)
								}
								return err
							})
						}()
						<-done
						cancel()
					}
				}()
			}
			wg.Wait()
			if runs.Load() != told.Load() {
				t.Errorf("fn ran %d times, OnCall told of %d calls let through", runs.Load(), told.Load())
			}
			if refusals.Load() != refusedTold.Load() {
				t.Errorf("%d refusals, OnCall told of %d", refusals.Load(), refusedTold.Load())
			}
			if a := attempts.Load(); a != runs.Load()+refusals.Load() {
				t.Errorf("%d attempts, %d runs + %d refusals", a, runs.Load(), refusals.Load())
			}
			time.Sleep(time.Second) // any opening is over
			if st := b.State(); st != breaker.HalfOpen && st != breaker.Closed {
				t.Fatalf("state %v after the open time", st)
			}
			for range 2 {
				done, err := b.Allow(context.Background())
				if err != nil {
					t.Fatalf("Allow after everyone left: %v (state %v, metrics %+v)", err, b.State(), b.Metrics())
				}
				defer done(nil)
			}
		})
	}
}
