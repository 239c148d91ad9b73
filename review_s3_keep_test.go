package ctxsync

import (
	"context"
	"testing"
)

// Regression: as in TestReviewS3_CtxErrPanicAfterAFastTakeLeavesItTaken, on the slow paths, where the primitive, taken when
// the fast path looked, is freed before the slow path takes it by itself:
// Lock's, Semaphore's and Weighted's keep call ctx.Err() after the take, and
// a ctx whose Err panics there leaves the lock locked with no holder (a
// KeyedLock's key for good), a permit or the units gone. keep must give back
// what it took when the look panics.
func TestReviewS3_CtxErrPanicInKeepLeavesItTaken(t *testing.T) {
	bg := context.Background()
	runTakeCases(t, []takeCase{
		{"Lock.Lock", func() (func(context.Context), func() bool, func(), int32) {
			l := NewLock()
			mustNoErr(l.Lock(bg)) // held at the fast path, freed at its look
			return func(ctx context.Context) { mustNoErr(l.Lock(ctx)); l.Unlock() },
				func() bool {
					if !l.TryLock() {
						return false
					}
					l.Unlock()
					return true
				}, l.Unlock, 1
		}},
		{"KeyedLock.Lock", func() (func(context.Context), func() bool, func(), int32) {
			k := new(KeyedLock[string])
			mustNoErr(k.Lock(bg, "a"))
			return func(ctx context.Context) { mustNoErr(k.Lock(ctx, "a")); k.Unlock("a") },
				func() bool {
					if !k.TryLock("a") {
						return false
					}
					k.Unlock("a")
					return k.Len() == 0
				}, func() { k.Unlock("a") }, 1
		}},
		{"Semaphore.Acquire", func() (func(context.Context), func() bool, func(), int32) {
			s := NewSemaphore(1)
			mustNoErr(s.Acquire(bg)) // taken at the fast path, freed at the slow path's Done
			return func(ctx context.Context) { mustNoErr(s.Acquire(ctx)); s.Release() },
				func() bool {
					if !s.TryAcquire() {
						return false
					}
					s.Release()
					return true
				}, s.Release, 0
		}},
		{"Weighted.Acquire", func() (func(context.Context), func() bool, func(), int32) {
			w := NewWeighted(2)
			mustNoErr(w.Acquire(bg, 2)) // taken at the fast path, freed at the slow path's look
			return func(ctx context.Context) { mustNoErr(w.Acquire(ctx, 2)); w.Release(2) },
				func() bool {
					if !w.TryAcquire(2) {
						return false
					}
					w.Release(2)
					return true
				}, func() { w.Release(2) }, 2
		}},
	})
}
