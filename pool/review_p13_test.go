package pool

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

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
				// The pool's first sweep, which may check the resource in
				// the background, is over before the Acquire, and after.
				synctest.Wait()
				ctx := &testutil.OnceCtx{Context: context.Background(), PanicAt: at}
				v := testutil.PanicOf(func() {
					if r, err := p.Acquire(ctx); err == nil {
						r.Release()
					}
				})
				if v != nil && v != testutil.ErrCtxPanic {
					t.Fatalf("Acquire panicked with %v", v)
				}
				synctest.Wait()
				requireWhole(t, p)
				s := p.Stats()
				require.Zero(t, s.ClosedHealth, "a check that ran %d times and always passed counted as failed: %+v", checks.Load(), s)
				require.Zero(t, told.Load(), "OnHealthCheckFail told of a check that ran %d times and always passed", checks.Load())
				require.Equal(t, 1, s.Idle, "the resource was not given back: %+v", s)
			})
		})
	}
}

// TestReviewP13_CloseAgainAfterTheBubble pins a defect: a pool with
// background work made inside a testing/synctest bubble and closed there,
// as its doc asks, was closed again after the bubble (a deferred Close, a
// shutdown that closes every pool it knows): that Close received from the
// channel the pool's goroutine closed as it ended, a channel of the bubble,
// and the runtime ended the program ("receive on synctest channel from
// outside bubble"). The doc says that closing a closed pool waits again, as
// the first Close does: here there is nothing left to wait for, and a Close
// that need not touch the bubble's channel must return nil.
func TestReviewP13_CloseAgainAfterTheBubble(t *testing.T) {
	if !testutil.InChild(t) {
		out, err := testutil.RunChild(t)
		if err != nil || !strings.Contains(string(out), "second Close = <nil>") {
			t.Fatalf("the second Close, after the bubble, ended the program (%v):\n%s", err, out)
		}
		return
	}
	var p *Pool[int]
	synctest.Test(t, func(t *testing.T) {
		p = mustNew(t, Config[int]{
			New:               func(context.Context) (int, error) { return 1, nil },
			MaxSize:           1,
			HealthCheckPeriod: time.Minute,
		})
		acquireWithin(t, p).Release()
		require.NoError(t, p.Close(context.Background()))
	})
	fmt.Printf("second Close = %v\n", p.Close(context.Background()))
}

// TestReviewP13_ResourceFromAnotherBubble pins a defect: every
// testing/synctest bubble's clock starts at the same instant, and a pool
// made outside the bubbles (a package-level pool that bubbled tests share,
// as the doc allows) kept the times of a resource released in one bubble
// at its virtual 30 minutes, and read them in the next bubble at its
// virtual 10 seconds: the resource seemed idle for -29m50s, and was neither
// health-checked nor closed for MaxIdleTime (1 minute). The doc says that
// times kept on one clock and read on another are taken as unknown: the
// resource is past MaxIdleTime, and due for its check. Only times less
// than an hour in the future were trusted; no time read on the pool's own
// clock is ever in the future of a later read.
func TestReviewP13_ResourceFromAnotherBubble(t *testing.T) {
	for _, maxIdle := range []time.Duration{0, time.Minute} {
		t.Run(fmt.Sprintf("MaxIdleTime=%v", maxIdle), func(t *testing.T) {
			l := newLedger()
			cfg := l.config(1)
			var checks atomic.Int32
			cfg.HealthCheck = func(context.Context, *conn) error { checks.Add(1); return nil }
			cfg.HealthCheckPeriod = 1000 * time.Hour
			cfg.MaxIdleTime = maxIdle
			p := mustNew(t, cfg)
			t.Cleanup(func() { _ = p.Close(context.Background()) })
			// The pool's goroutine runs outside the bubbles: its first
			// sweep must be over before the resource is idle, or its
			// check would hand it to a bubble's waiter from outside.
			// The sweep ends by taking the wake-up sent now.
			p.wake()
			for len(p.kick) > 0 {
				runtime.Gosched()
			}
			synctest.Test(t, func(t *testing.T) {
				r := acquireWithin(t, p)
				time.Sleep(30 * time.Minute)
				r.Release()
			})
			synctest.Test(t, func(t *testing.T) {
				time.Sleep(10 * time.Second)
				acquireWithin(t, p).Release()
			})
			s := p.Stats()
			if maxIdle > 0 {
				require.Equal(t, int64(1), s.ClosedIdle, "the resource from another bubble was not taken as idle too long: %+v", s)
			} else {
				require.Equal(t, int32(1), checks.Load(), "the resource from another bubble was not health-checked: %+v", s)
			}
			require.NoError(t, p.Close(context.Background()))
			l.check(t)
		})
	}
}
