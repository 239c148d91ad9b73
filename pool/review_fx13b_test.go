package pool

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReviewFx13b_FailedCheckThenCallerCtxPanicClosesTheResource pins a
// defect of the check at Acquire: the HealthCheck ran and failed (the
// resource is broken), then the cancel of the check's ctx, which calls the
// caller's ctx (Done), panicked. errAfterCheck took that panic as it takes
// a caller's ctx that ended during the check, and gave the resource back:
// to the idle ones, or straight to the next waiter, which takes a resource
// handed over as good, unchecked. The check's verdict is known and the
// caller's ctx has not ended (it panicked): the resource must be closed for
// ClosedHealth and told to OnHealthCheckFail, as for a failed check whose
// caller's ctx is fine, and the panic then goes on.
func TestReviewFx13b_FailedCheckThenCallerCtxPanicClosesTheResource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errBad := errors.New("broken")
		ctx := &testutil.ArmedCtx{Context: context.Background()}
		var checks, told atomic.Int32
		var atAcquire atomic.Bool
		p := mustNew(t, Config[int]{
			New: func(context.Context) (int, error) { return 1, nil },
			HealthCheck: func(context.Context, int) error {
				if !atAcquire.Load() {
					return nil // the pool's first sweep's
				}
				checks.Add(1)
				ctx.Arm() // the next call of the caller's ctx: the cancel's
				return errBad
			},
			HealthCheckSkip: NoHealthCheckSkip,
			MaxSize:         1,
			Hooks:           Hooks{OnHealthCheckFail: func(error) { told.Add(1) }},
		})
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		acquireWithin(t, p).Release()
		synctest.Wait() // the first sweep is over
		atAcquire.Store(true)
		v := testutil.PanicOf(func() {
			if r, err := p.Acquire(ctx); err == nil {
				r.Release()
			}
		})
		require.Equal(t, testutil.ErrCtxPanic, v, "Acquire did not panic with the ctx's panic")
		synctest.Wait()
		require.Equal(t, int32(1), checks.Load(), "the check did not run once")
		requireWhole(t, p)
		s := p.Stats()
		require.Equal(t, int64(1), s.ClosedHealth, "a resource that failed its check was kept: %+v", s)
		require.Equal(t, int32(1), told.Load(), "OnHealthCheckFail not told of a failed check")
		require.Zero(t, s.Idle, "the broken resource is idle again: %+v", s)
	})
}

// goexitCtx is a caller's ctx whose next Done or Err, once armed, calls
// runtime.Goexit.
type goexitCtx struct {
	context.Context
	armed atomic.Bool
}

func (c *goexitCtx) hook() {
	if c.armed.CompareAndSwap(true, false) {
		runtime.Goexit()
	}
}
func (c *goexitCtx) Done() <-chan struct{} { c.hook(); return c.Context.Done() }
func (c *goexitCtx) Err() error            { c.hook(); return c.Context.Err() }

// TestReviewFx13b_CallerCtxGoexitAfterCheck: a caller's ctx that calls
// runtime.Goexit in the cancel of the check's ctx at Acquire (a t.FailNow
// in a test's ctx, say) leaves the pool as one that panics there does: a
// resource that passed goes back, idle; one that failed is closed for
// ClosedHealth and told to OnHealthCheckFail; nothing is kept.
func TestReviewFx13b_CallerCtxGoexitAfterCheck(t *testing.T) {
	for _, fail := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			ctx := &goexitCtx{Context: context.Background()}
			var told atomic.Int32
			var atAcquire atomic.Bool
			p := mustNew(t, Config[int]{
				New: func(context.Context) (int, error) { return 1, nil },
				HealthCheck: func(context.Context, int) error {
					if !atAcquire.Load() {
						return nil // the pool's first sweep's
					}
					ctx.armed.Store(true)
					if fail {
						return errors.New("bad")
					}
					return nil
				},
				HealthCheckSkip: NoHealthCheckSkip,
				MaxSize:         1,
				Hooks:           Hooks{OnHealthCheckFail: func(error) { told.Add(1) }},
			})
			t.Cleanup(func() { _ = p.Close(context.Background()) })
			acquireWithin(t, p).Release()
			synctest.Wait() // the first sweep is over
			atAcquire.Store(true)
			done := make(chan struct{})
			go func() {
				defer close(done)
				if r, err := p.Acquire(ctx); err == nil {
					r.Release()
				}
			}()
			<-done
			synctest.Wait()
			requireWhole(t, p)
			s := p.Stats()
			if fail {
				require.Equal(t, int64(1), s.ClosedHealth, "%+v", s)
				require.Equal(t, int32(1), told.Load())
			} else {
				require.Equal(t, 1, s.Idle, "%+v", s)
				require.Zero(t, told.Load())
			}
		})
	}
}
