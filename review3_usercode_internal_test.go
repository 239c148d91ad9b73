package ctxsync

import (
	"context"
	"sync/atomic"
	"testing"
)

// panicCtx is a caller's Context whose Err (or Done) panics from the nth call
// on: the caller's code, which the primitives must never run under an
// internal lock, nor let leave a reference behind.
type panicCtx struct {
	context.Context
	errCalls, errAfter   atomic.Int32
	doneCalls, doneAfter atomic.Int32
}

func newPanicCtx(errAfter, doneAfter int32) *panicCtx {
	c := &panicCtx{Context: context.Background()}
	c.errAfter.Store(errAfter)
	c.doneAfter.Store(doneAfter)
	return c
}

func (c *panicCtx) Err() error {
	if n := c.errCalls.Add(1); c.errAfter.Load() > 0 && n >= c.errAfter.Load() {
		panic("user ctx.Err panics")
	}
	return c.Context.Err()
}

func (c *panicCtx) Done() <-chan struct{} {
	if n := c.doneCalls.Add(1); c.doneAfter.Load() > 0 && n >= c.doneAfter.Load() {
		panic("user ctx.Done panics")
	}
	return c.Context.Done()
}

// mayPanic runs f, which may panic with the user code's panic or not (a
// primitive that no longer calls the panicking method does not).
func mayPanic(f func()) {
	defer func() { recover() }()
	f()
}

func mustPanic(t *testing.T, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Fatal("expected the user code's panic to propagate")
		}
	}()
	f()
}

// Flight.Do calls ctx.Err() (the caller's code) while holding f.mu: if it
// panics, the Flight's mutex stays locked for good and every later Do, Forget
// and Len deadlocks. Same if ctx.Err calls back into the Flight (f.Len()).
func TestReview3_FlightDoRunsCallerCtxErrUnderInternalLock(t *testing.T) {
	var f Flight[string, int]
	ctx := newPanicCtx(2, 0) // first Err (CtxErr, unlocked) fine; a second one panics
	mayPanic(func() {
		f.Do(ctx, "k", func(context.Context) (int, error) { return 1, nil })
	})
	if !f.mu.TryLock() {
		t.Fatal("Flight's internal mutex left locked after the caller's ctx.Err panicked: the Flight is wedged for good")
	}
	f.mu.Unlock()
}

// The same lock-held call, made to call back into the Flight: ctx.Err calls
// f.Len() and deadlocks (detected with TryLock from inside the callback).
func TestReview3_FlightDoCtxErrCallbackSeesInternalLockHeld(t *testing.T) {
	var f Flight[string, int]
	var heldDuringUserCode atomic.Bool
	ctx := &callbackCtx{Context: context.Background(), f: func() {
		if !f.mu.TryLock() {
			heldDuringUserCode.Store(true)
			return
		}
		f.mu.Unlock()
	}}
	f.Do(ctx, "k", func(context.Context) (int, error) { return 1, nil })
	if heldDuringUserCode.Load() {
		t.Fatal("caller's ctx.Err ran with Flight.mu held: a ctx.Err that calls f.Len() deadlocks")
	}
}

type callbackCtx struct {
	context.Context
	f func()
}

func (c *callbackCtx) Err() error { c.f(); return c.Context.Err() }

// KeyedLock.Lock counts a reference to the key's entry, then calls the key's
// Lock, which calls ctx.Err (the caller's code). If that panics, the reference
// is never dropped: the key's entry stays for good (Len never returns to 0,
// memory no longer follows the keys in use).
func TestReview3_KeyedLockPanickingCtxLeaksKeyEntry(t *testing.T) {
	var k KeyedLock[string]
	ctx := newPanicCtx(1, 0)
	mustPanic(t, func() { k.Lock(ctx, "a") })
	if n := k.Len(); n != 0 {
		t.Fatalf("Len() = %d after a Lock whose ctx.Err panicked; want 0 (the key's entry leaked with a reference nobody drops)", n)
	}
	// And the leaked reference outlives a full Lock/Unlock.
	if err := k.Lock(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	k.Unlock("a")
	if n := k.Len(); n != 0 {
		t.Fatalf("Len() = %d after Lock/Unlock; want 0", n)
	}
}

// WaitGroup.Wait queues under q's lock with PushCtx, which calls ctx.Done()
// (the caller's code) with the internal lock held: a panicking Done leaves the
// lock held and the waiters flag set, and the next Add that zeroes the counter
// blocks forever on the lock.
func TestReview3_WaitGroupWaitRunsCallerCtxDoneUnderInternalLock(t *testing.T) {
	var wg WaitGroup
	wg.Add(1)
	ctx := newPanicCtx(0, 1)
	mustPanic(t, func() { wg.Wait(ctx) })
	if !wg.q.TryLock() {
		t.Fatal("WaitGroup's internal lock left held after the caller's ctx.Done panicked: the next Done deadlocks")
	}
	wg.q.Unlock()
	wg.Done()
}

// Lazy.Get inherits the Flight bug: a Get whose ctx.Err panics (third call,
// the one Flight.Do makes under its mutex) leaves the Lazy's Flight locked,
// and every later Get of a value not yet made deadlocks.
func TestReview3_LazyGetPanickingCtxWedgesLazy(t *testing.T) {
	l := NewLazy(func(context.Context) (int, error) { return 7, nil })
	ctx := newPanicCtx(3, 0)
	mayPanic(func() { l.Get(ctx) })
	if !l.flight.mu.TryLock() {
		t.Fatal("Lazy's internal Flight mutex left locked after the caller's ctx.Err panicked: every later Get deadlocks")
	}
	l.flight.mu.Unlock()
}

// Flight.Do also calls ctx.Done() (via PushCtx) with f.mu held.
func TestReview3_FlightDoRunsCallerCtxDoneUnderInternalLock(t *testing.T) {
	var f Flight[string, int]
	ctx := newPanicCtx(0, 1)
	mustPanic(t, func() {
		f.Do(ctx, "k", func(context.Context) (int, error) { return 1, nil })
	})
	if !f.mu.TryLock() {
		t.Fatal("Flight's internal mutex left locked after the caller's ctx.Done panicked")
	}
	f.mu.Unlock()
}
