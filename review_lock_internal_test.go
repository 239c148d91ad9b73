package ctxsync

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
)

// TestReviewLockTakeCountWraps: the count of takes in the state word wraps
// through the sign bit and through zero without disturbing the held and
// waiters bits: Lock, TryLock, Unlock, hand-over to waiters and Unlock of an
// unlocked Lock behave as on a fresh Lock.
func TestReviewLockTakeCountWraps(t *testing.T) {
	for _, start := range []int64{math.MaxInt64 &^ 3, -lockTake, -2 * lockTake} {
		synctest.Test(t, func(t *testing.T) {
			var l Lock
			l.state.Store(start)
			for range 4 {
				if err := l.Lock(context.Background()); err != nil {
					t.Fatal(err)
				}
				if !l.Locked() || l.TryLock() {
					t.Fatalf("start %#x: held, yet Locked %v", start, l.Locked())
				}
				done := make(chan struct{})
				go func() {
					defer close(done)
					if err := l.Lock(context.Background()); err != nil {
						t.Error(err)
					}
					l.Unlock()
				}()
				synctest.Wait()
				if l.Waiting() != 1 {
					t.Fatalf("start %#x: %d waiting", start, l.Waiting())
				}
				l.Unlock()
				<-done
				if l.Locked() {
					t.Fatalf("start %#x: locked after every Unlock, state %#x", start, l.state.Load())
				}
				if !l.TryLock() {
					t.Fatalf("start %#x: TryLock of a free Lock failed, state %#x", start, l.state.Load())
				}
				l.Unlock()
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("start %#x: Unlock of unlocked did not panic", start)
						}
					}()
					l.Unlock()
				}()
			}
			if s := l.state.Load(); s&(lockHeld|lockWaiters) != 0 {
				t.Errorf("start %#x: state %#x", start, s)
			}
		})
	}
}
