package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A caller's Context is the caller's code: no method of it may run while a
// limiter's internal lock is held, and one that panics must leave the limiter
// whole. testutil.ProbeCtx looks at the lock at each call, and panics from
// its PanicAt'th call on (see testutil.ProbeCall).

// runWaitCase makes a Wait of a TokenBucket, a SlidingWindow and a
// SlidingWindowCounter, with no event left, wait under a testutil.ProbeCtx (as the
// head of the queue, or behind another waiter), ends its ctx, and checks
// that a new Wait is served once events come. It returns the ctx's calls.
func runWaitCase(t *testing.T, kind string, behind bool, panicAt int32) int32 {
	var calls int32
	synctest.Test(t, func(t *testing.T) {
		bg := context.Background()
		var wait func(context.Context) error
		var lock *waitq.Mutex
		switch kind {
		case "TokenBucket":
			l := NewTokenBucket(1, 1)
			wait, lock = l.Wait, &l.w.q.Mutex
		case "SlidingWindow":
			l := NewSlidingWindow(1, time.Second)
			wait, lock = l.Wait, &l.w.q.Mutex
		default:
			l := NewSlidingWindowCounter(1, time.Second)
			wait, lock = l.Wait, &l.w.q.Mutex
		}
		if err := wait(bg); err != nil {
			t.Fatal(err)
		}
		head := make(chan error, 1)
		if behind {
			go func() { head <- wait(bg) }()
			synctest.Wait()
		}
		calls = testutil.ProbeCall(t, []testutil.TryLocker{lock}, panicAt, func(ctx context.Context) { _ = wait(ctx) })
		if behind {
			if err := <-head; err != nil {
				t.Fatal(err)
			}
		}
		// The limiter is whole: a new Wait is served when the next event
		// comes.
		if err := wait(bg); err != nil {
			t.Fatal(err)
		}
	})
	return calls
}

func TestWaitCallerCtxNeverRunsUnderTheLock(t *testing.T) {
	for _, kind := range []string{"TokenBucket", "SlidingWindow", "SlidingWindowCounter"} {
		for _, behind := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/behind=%v", kind, behind), func(t *testing.T) {
				n := runWaitCase(t, kind, behind, 0)
				if n == 0 {
					t.Fatal("Wait never looked at its ctx: the probe tested nothing")
				}
				for at := int32(1); at <= n; at++ {
					t.Run(fmt.Sprintf("panic at call %d of %d", at, n), func(t *testing.T) {
						runWaitCase(t, kind, behind, at)
					})
				}
			})
		}
	}
}
