package adaptive

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// s3RunAcquireCase makes an Acquire wait at the limit under a testutil.ProbeCtx, ends
// its ctx, and checks that the Limiter serves a new Acquire once the slot is
// freed. It returns the number of ctx method calls the Acquire made.
// Locks seen held are reported only if report is set.
func s3RunAcquireCase(t *testing.T, maxWait time.Duration, panicAt int32, report bool) int32 {
	var calls int32
	synctest.Test(t, func(t *testing.T) {
		bg := context.Background()
		l := New(Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1, MaxWait: maxWait})
		held, err := l.Acquire(bg)
		if err != nil {
			t.Fatal(err)
		}
		var locks []testutil.TryLocker
		if report {
			locks = []testutil.TryLocker{&l.q.Mutex}
		}
		calls = testutil.ProbeCall(t, locks, panicAt, func(ctx context.Context) {
			if tk, err := l.Acquire(ctx); err == nil {
				tk.Ignore()
			}
		})
		if !l.q.TryLock() {
			t.Fatal("the Limiter's lock was left held")
		}
		l.q.Unlock()
		held.Ignore()
		tk, err := l.Acquire(bg)
		if err != nil {
			t.Fatalf("Acquire once the slot is free = %v, want a Ticket", err)
		}
		tk.Ignore()
	})
	return calls
}

// Regression: Limiter.Acquire at the limit runs the caller's ctx under its
// lock: context.WithTimeout(ctx, MaxWait) (which calls ctx.Deadline, Value
// and Done), wctx.Done() (the ctx itself when MaxWait is unbounded), and
// ctx.Err() after Cancel, to decide whether a slot that came as ctx ended is
// kept. One that calls back into the Limiter deadlocks. The Limiter must
// read what it needs of ctx (Done, and a timer ctx made from it) before it
// locks, test the channel under the lock with waitq.Ended, and call
// ctx.Err() once unlocked.
func TestReviewS3_AdaptiveAcquireRunsCallerCtxUnderItsLock(t *testing.T) {
	for _, mw := range []time.Duration{unboundedWait, time.Hour} {
		t.Run(fmt.Sprintf("MaxWait=%v", mw), func(t *testing.T) {
			if s3RunAcquireCase(t, mw, 0, true) == 0 {
				t.Fatal("Acquire never looked at its ctx: the probe tested nothing")
			}
		})
	}
}

// Regression: a ctx method that panics under the Limiter's lock (see the
// test above) leaves it held: every later Acquire, Done and Ignore hangs.
// The panic must reach the caller with the Limiter whole.
func TestReviewS3_AdaptiveAcquireCallerCtxPanicLeavesTheLimiterWhole(t *testing.T) {
	for _, mw := range []time.Duration{unboundedWait, time.Hour} {
		t.Run(fmt.Sprintf("MaxWait=%v", mw), func(t *testing.T) {
			n := s3RunAcquireCase(t, mw, 0, false)
			for at := int32(1); at <= n; at++ {
				t.Run(fmt.Sprintf("panic at call %d of %d", at, n), func(t *testing.T) {
					s3RunAcquireCase(t, mw, at, false)
				})
			}
		})
	}
}
