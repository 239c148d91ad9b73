package pool

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// deadlineHookCtx is a caller's ctx whose Deadline, which the HealthCheck's
// ctx at Acquire asks first, runs hook: it ends the ctx, or panics, there,
// just before the check.
type deadlineHookCtx struct {
	context.Context
	hook func()
}

func (c *deadlineHookCtx) Deadline() (time.Time, bool) {
	c.hook()
	return c.Context.Deadline()
}

// TestEdges14_UncheckedResourceIsCheckedByNextTaker pins a defect: an idle
// resource due for its HealthCheck, taken by an Acquire whose ctx then
// panicked before the check (the check never ran), or ended just before it
// (the check ran under a ctx already done, and failed: the resource was
// given the benefit of the doubt), went to the next waiter, which takes what
// it is handed as working: a broken resource reached a caller unchecked.
// Config.HealthCheck's doc promises the check to whoever takes an idle
// resource not used lately. Right: the waiter it goes to runs the check
// itself, under its own ctx, and a resource that fails it is closed and the
// waiter served another.
func TestEdges14_UncheckedResourceIsCheckedByNextTaker(t *testing.T) {
	for _, how := range []string{"ctx panics", "ctx ends"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var made, checks atomic.Int32
				var broken atomic.Bool // once the pool's first sweep is over
				p := mustNew(t, Config[int32]{
					New: func(context.Context) (int32, error) { return made.Add(1), nil },
					HealthCheck: func(ctx context.Context, v int32) error {
						checks.Add(1)
						if v == 1 && broken.Load() {
							return errors.New("the first resource is broken")
						}
						return ctx.Err()
					},
					HealthCheckSkip: NoHealthCheckSkip,
					MaxSize:         1,
				})
				t.Cleanup(func() { _ = p.Close(context.Background()) })
				acquireWithin(t, p).Release()
				// The pool's first sweep, which may check the resource in
				// the background, is over: the next is a minute away.
				synctest.Wait()
				broken.Store(true)

				type got struct {
					v   int32
					err error
				}
				next := make(chan got, 1)
				callerCtx, cancel := context.WithCancel(context.Background())
				defer cancel()
				ctx := &deadlineHookCtx{Context: callerCtx, hook: func() {
					// The Acquire has taken the idle resource: the next
					// one queues behind it.
					go func() {
						r, err := p.Acquire(context.Background())
						if err != nil {
							next <- got{err: err}
							return
						}
						next <- got{v: r.Value()}
						r.Release()
					}()
					synctest.Wait()
					require.Equal(t, 1, p.Stats().Waiting)
					if how == "ctx panics" {
						panic("the caller's ctx panics")
					}
					cancel()
				}}
				func() {
					defer func() { _ = recover() }()
					_, err := p.Acquire(ctx)
					require.ErrorIs(t, err, context.Canceled)
				}()
				g := <-next
				require.NoError(t, g.err)
				require.NotEqual(t, int32(1), g.v, "the waiter was handed the broken resource, unchecked (%d checks)", checks.Load())
				synctest.Wait()
				requireWhole(t, p)
				require.EqualValues(t, 1, p.Stats().ClosedHealth)
			})
		})
	}
}

// TestEdges14_TinyHealthCheckPeriodDoesNotSpin pins a defect:
// Config.HealthCheckPeriod took any positive value, and 1 ns (a config
// file's "1" read as a Duration, say) had the background goroutine sweep
// back to back, one core busy for good, and with NoHealthCheckSkip a
// HealthCheck at every sweep: thousands in a virtual millisecond. Right: a
// period below a millisecond counts as a millisecond (see Config). A period
// near math.MaxInt64 works too: no sweep but the first, and Close returns.
func TestEdges14_TinyHealthCheckPeriodDoesNotSpin(t *testing.T) {
	for _, period := range []time.Duration{1, time.Microsecond, time.Millisecond - 1, math.MaxInt64} {
		t.Run(period.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var checks atomic.Int64
				p := mustNew(t, Config[int]{
					New:               func(context.Context) (int, error) { return 1, nil },
					HealthCheck:       func(context.Context, int) error { checks.Add(1); return nil },
					HealthCheckSkip:   NoHealthCheckSkip,
					HealthCheckPeriod: period,
					MaxSize:           1,
				})
				t.Cleanup(func() { _ = p.Close(context.Background()) })
				acquireWithin(t, p).Release()
				synctest.Wait()
				before := checks.Load()
				time.Sleep(100 * time.Microsecond)
				synctest.Wait()
				require.LessOrEqual(t, checks.Load()-before, int64(1),
					"background HealthChecks in 100µs with a period of %v", period)
				require.NoError(t, p.Close(t.Context()))
			})
		})
	}
}

// TestEdges14_NewValueWithErrorIsNotClosed pins a decision: when Config.New
// returns an error, the value it returns beside it is dropped, never given to
// Config.Close. Go's convention is that a value returned with an error is not
// to be used, and many a New returns a half-built one (a client whose dial
// failed, its connection nil), which a Close would panic on, or one it has
// closed itself, which a Close would close twice. A New that opened
// something before it failed (a connection whose handshake failed) closes it
// itself; Config.New's doc says so.
func TestEdges14_NewValueWithErrorIsNotClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closed atomic.Int32
		failed := errors.New("handshake failed")
		p := mustNew(t, Config[*int]{
			New:     func(context.Context) (*int, error) { return new(int), failed },
			Close:   func(*int) error { closed.Add(1); return nil },
			MaxSize: 1,
		})
		_, err := p.Acquire(t.Context())
		require.ErrorIs(t, err, failed)
		require.NoError(t, p.Close(t.Context()))
		require.Zero(t, closed.Load(), "Config.Close called on the value New returned with its error")
		s := p.Stats()
		require.EqualValues(t, 1, s.CreateFailures)
		require.Zero(t, s.Total)
	})
}
