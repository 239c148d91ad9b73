package pool

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReviewP13_CallerCtxPanicAroundCheckIsNoFailedCheck pins a defect:
// the HealthCheck at Acquire runs under context.WithTimeout of the caller's
// ctx, and WithTimeout (its Deadline, Done and Value) and the cancel after
// the check (Done again) are the caller's code. A panic there was taken for
// a panic of the HealthCheck: the idle resource, whose check never ran or
// had just passed, was closed for ClosedHealth and told to
// OnHealthCheckFail. A caller's ctx that panics must leave the pool as a
// caller's ctx that ends does: the resource goes back, untouched, and no
// check is counted as failed that did not fail.
func TestReviewP13_CallerCtxPanicAroundCheckIsNoFailedCheck(t *testing.T) {
	for at := int32(1); at <= 8; at++ {
		t.Run(fmt.Sprintf("panic at call %d", at), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var checks, told atomic.Int32
				p := mustNew(t, Config[int]{
					New:             func(context.Context) (int, error) { return 1, nil },
					HealthCheck:     func(context.Context, int) error { checks.Add(1); return nil }, // always passes
					HealthCheckSkip: NoHealthCheckSkip,
					MaxSize:         1,
					Hooks:           Hooks{OnHealthCheckFail: func(error) { told.Add(1) }},
				})
				t.Cleanup(func() { _ = p.Close(context.Background()) })
				acquireWithin(t, p).Release()
				ctx := &testutil.OnceCtx{Context: context.Background(), PanicAt: at}
				v := testutil.PanicOf(func() {
					if r, err := p.Acquire(ctx); err == nil {
						r.Release()
					}
				})
				if v != nil && v != testutil.ErrCtxPanic {
					t.Fatalf("Acquire panicked with %v", v)
				}
				requireWhole(t, p)
				s := p.Stats()
				require.Zero(t, s.ClosedHealth, "a check that ran %d times and always passed counted as failed: %+v", checks.Load(), s)
				require.Zero(t, told.Load(), "OnHealthCheckFail told of a check that ran %d times and always passed", checks.Load())
				require.Equal(t, 1, s.Idle, "the resource was not given back: %+v", s)
			})
		})
	}
}
