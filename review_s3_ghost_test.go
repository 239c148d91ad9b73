package ctxsync

import (
	"context"
	"testing"
)

// donePanicCtx is a caller's ctx whose Done panics.
type donePanicCtx struct{ context.Context }

func (donePanicCtx) Done() <-chan struct{} { panic(errUserCtxPanic) }

// Regression: Semaphore.Acquire counts the caller as waiting (its Add takes
// the count below zero) and only then, in acquireSlow, calls ctx.Done(),
// the caller's code. A Done that panics there leaves the caller counted: the
// next Release promises its permit to that ghost (owed), so TryAcquire, and
// Available, find no permit free although one is, until some Acquire comes
// by the slow path and takes the ghost's permit. ctx.Done must be read
// before the caller is counted (in Acquire, with CtxErr), or the count
// taken back if it panics.
func TestReviewS3_SemaphoreDonePanicLeavesAGhostWaiter(t *testing.T) {
	s := NewSemaphore(1)
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if p := recover(); p != errUserCtxPanic {
				t.Fatalf("Acquire panicked with %v, want the ctx's panic", p)
			}
		}()
		_ = s.Acquire(donePanicCtx{context.Background()})
	}()
	s.Release()
	if !s.TryAcquire() {
		t.Fatal("TryAcquire of the one permit, released, = false: the Acquire whose ctx.Done panicked is still counted as waiting, and the permit was promised to it")
	}
	s.Release()
}

// releasingDonePanicCtx's Done releases a permit, then panics: the permit
// is promised to the caller, counted as waiting, when its Done panics.
type releasingDonePanicCtx struct {
	context.Context
	s *Semaphore
}

func (c releasingDonePanicCtx) Done() <-chan struct{} {
	c.s.Release()
	panic(errUserCtxPanic)
}

// As above, with the permit already promised to the caller when its Done
// panics: the promise is dropped and the permit put back.
func TestReviewS3_SemaphoreDonePanicWithAPermitPromised(t *testing.T) {
	s := NewSemaphore(1)
	if err := s.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if p := recover(); p != errUserCtxPanic {
				t.Fatalf("Acquire panicked with %v, want the ctx's panic", p)
			}
		}()
		_ = s.Acquire(releasingDonePanicCtx{context.Background(), s})
	}()
	if !s.TryAcquire() {
		t.Fatal("TryAcquire of the one permit, released, = false")
	}
	if s.TryAcquire() {
		t.Fatal("a second TryAcquire of a Semaphore of one permit = true")
	}
	s.Release()
}
