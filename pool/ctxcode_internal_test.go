package pool

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// A caller's Context is the caller's code: no method of it may run while the
// pool's lock is held, and one that panics must leave the pool whole.
// testutil.ProbeCtx looks at the lock at each call, and panics from its
// PanicAt'th call on.
var errUserCtxPanic = testutil.ErrCtxPanic

// runAcquireCase makes an Acquire (or a Close) wait under a testutil.ProbeCtx, ends its
// ctx, and checks that the pool serves (or closes) as before.
func runAcquireCase(t *testing.T, closing bool, panicAt int32) int32 {
	var calls int32
	synctest.Test(t, func(t *testing.T) {
		bg := context.Background()
		p, err := New(Config[int]{
			New:     func(context.Context) (int, error) { return 1, nil },
			MaxSize: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		held, err := p.Acquire(bg)
		if err != nil {
			t.Fatal(err)
		}
		calls = testutil.ProbeCall(t, []testutil.TryLocker{&p.q.Mutex}, panicAt, func(ctx context.Context) {
			if closing {
				_ = p.Close(ctx)
				return
			}
			if r, err := p.Acquire(ctx); err == nil {
				r.Release()
			}
		})
		held.Release()
		if !closing {
			r, err := p.Acquire(bg)
			if err != nil {
				t.Fatal(err)
			}
			r.Release()
		}
		if err := p.Close(bg); err != nil {
			t.Fatal(err)
		}
	})
	return calls
}

func TestAcquireCallerCtxNeverRunsUnderTheLock(t *testing.T) {
	for _, closing := range []bool{false, true} {
		t.Run(fmt.Sprintf("close=%v", closing), func(t *testing.T) {
			n := runAcquireCase(t, closing, 0)
			if n == 0 {
				t.Fatal("the call never looked at its ctx: the probe tested nothing")
			}
			for at := int32(1); at <= n; at++ {
				t.Run(fmt.Sprintf("panic at call %d of %d", at, n), func(t *testing.T) {
					runAcquireCase(t, closing, at)
				})
			}
		})
	}
}
