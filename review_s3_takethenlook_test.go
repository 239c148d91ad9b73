package ctxsync

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// errPanicCtx is a caller's ctx whose Err panics from its panicAt'th call
// on. At its Err call freeAt (or its first Done call, if freeAt is 0) it
// runs free, if set: the primitive, held by the test, is freed in the middle
// of the call.
type errPanicCtx struct {
	context.Context
	panicAt, freeAt int32
	calls, dones    atomic.Int32
	free            func()
	freed           bool
}

func (c *errPanicCtx) Err() error {
	n := c.calls.Add(1)
	if n == c.freeAt && c.free != nil {
		c.freed = true
		c.free()
	}
	if n >= c.panicAt {
		panic(errUserCtxPanic)
	}
	return c.Context.Err()
}

func (c *errPanicCtx) Done() <-chan struct{} {
	if c.dones.Add(1) == 1 && c.freeAt == 0 && c.free != nil {
		c.freed = true
		c.free()
	}
	return c.Context.Done()
}

// takeCase is a call that takes something, whether the primitive is whole
// again (what the call may have taken is free), what frees the primitive
// held by the test (nil: it is free), and at which Err call (0: at the
// first Done call).
type takeCase struct {
	name  string
	setup func() (call func(context.Context), whole func() bool, free func(), freeAt int32)
}

func runTakeCases(t *testing.T, cases []takeCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for at := int32(1); at <= 4; at++ {
				t.Run(fmt.Sprintf("panic at Err call %d", at), func(t *testing.T) {
					call, whole, free, freeAt := c.setup()
					ctx := &errPanicCtx{Context: context.Background(), panicAt: at, free: free, freeAt: freeAt}
					func() {
						defer func() {
							if p := recover(); p != nil && p != errUserCtxPanic {
								t.Fatalf("the call panicked with %v", p)
							}
						}()
						call(ctx)
					}()
					if ctx.free != nil && !ctx.freed {
						ctx.free() // the call panicked before it got that far
					}
					if !whole() {
						t.Errorf("after ctx.Err panicked at its call %d of %d, what the call took is still taken: the primitive is short of it for good", at, ctx.calls.Load())
					}
				})
			}
		})
	}
}

func mustNoErr(err error) {
	if err != nil {
		panic(err)
	}
}

// Regression: the primitives look at ctx before a take and again after it
// ("a lock freed after ctx ended is not taken"), and the look after runs
// with nothing in place for a panic. On the fast paths, Semaphore and
// Weighted take with an Add, RWLock with an Add or a CAS, then call
// ctx.Err(): a ctx whose Err panics there takes the permit, the units or
// the lock with it for good, and every later caller waits for ever. What was
// taken must be given back before the panic goes on (a defer placed before
// the look, or a single look before a CAS from the state read before it, as
// Lock.Lock's fast path does), as with all user code the library calls.
//
// The probes of ctxcode_internal_test.go miss it: their calls are made to
// wait, so their takes happen in a grant, which needs no look after.
func TestReviewS3_CtxErrPanicAfterAFastTakeLeavesItTaken(t *testing.T) {
	whole := func(try func() bool, undo func()) func() bool {
		return func() bool {
			if !try() {
				return false
			}
			undo()
			return true
		}
	}
	runTakeCases(t, []takeCase{
		{"Semaphore.Acquire", func() (func(context.Context), func() bool, func(), int32) {
			s := NewSemaphore(1)
			return func(ctx context.Context) { mustNoErr(s.Acquire(ctx)); s.Release() },
				whole(s.TryAcquire, s.Release), nil, 0
		}},
		{"BoundedSemaphore.Acquire", func() (func(context.Context), func() bool, func(), int32) {
			s := NewBoundedSemaphore(1)
			return func(ctx context.Context) { mustNoErr(s.Acquire(ctx)); s.Release() },
				whole(s.TryAcquire, s.Release), nil, 0
		}},
		{"Weighted.Acquire", func() (func(context.Context), func() bool, func(), int32) {
			w := NewWeighted(2)
			return func(ctx context.Context) { mustNoErr(w.Acquire(ctx, 2)); w.Release(2) },
				whole(func() bool { return w.TryAcquire(2) }, func() { w.Release(2) }), nil, 0
		}},
		{"RWLock.RLock", func() (func(context.Context), func() bool, func(), int32) {
			rw := NewRWLock()
			return func(ctx context.Context) { mustNoErr(rw.RLock(ctx)); rw.RUnlock() },
				whole(rw.TryLock, rw.Unlock), nil, 0
		}},
		{"RWLock.Lock", func() (func(context.Context), func() bool, func(), int32) {
			rw := NewRWLock()
			return func(ctx context.Context) { mustNoErr(rw.Lock(ctx)); rw.Unlock() },
				whole(rw.TryLock, rw.Unlock), nil, 0
		}},
	})
}
