package testutil

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A TryLocker is an internal lock of a primitive, as a ProbeCtx sees it.
type TryLocker interface {
	TryLock() bool
	Unlock()
}

// ErrCtxPanic is the value a ProbeCtx panics with.
var ErrCtxPanic = errors.New("the caller's ctx panics")

// A ProbeCtx is a caller's Context for the tests of the rule that a caller's
// ctx is the caller's code: at each call of one of its methods it looks for
// any of Locks held (which it reports in Held), and from its PanicAt'th call
// on (0: never) it panics with ErrCtxPanic. Locks must be locks that only the
// call under test may hold while the ProbeCtx is used.
type ProbeCtx struct {
	context.Context
	Locks   []TryLocker
	PanicAt int32

	calls atomic.Int32
	mu    sync.Mutex
	held  []string
}

// Calls returns the number of method calls made so far.
func (c *ProbeCtx) Calls() int32 { return c.calls.Load() }

// Held returns a line for each method call made with one of Locks held.
func (c *ProbeCtx) Held() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.held...)
}

func (c *ProbeCtx) hook(method string) {
	n := c.calls.Add(1)
	for i, l := range c.Locks {
		if !l.TryLock() {
			c.mu.Lock()
			c.held = append(c.held, fmt.Sprintf("%s (call %d) ran with internal lock %d held", method, n, i))
			c.mu.Unlock()
			continue
		}
		l.Unlock()
	}
	if c.PanicAt > 0 && n >= c.PanicAt {
		panic(ErrCtxPanic)
	}
}

// Err looks, then returns the Context's Err.
func (c *ProbeCtx) Err() error { c.hook("Err"); return c.Context.Err() }

// Done looks, then returns the Context's Done.
func (c *ProbeCtx) Done() <-chan struct{} { c.hook("Done"); return c.Context.Done() }

// Value looks, then returns the Context's Value.
func (c *ProbeCtx) Value(key any) any { c.hook("Value"); return c.Context.Value(key) }

// Deadline looks, then returns the Context's Deadline.
func (c *ProbeCtx) Deadline() (time.Time, bool) { c.hook("Deadline"); return c.Context.Deadline() }

// ProbeCall runs call in a goroutine of the current testing/synctest bubble,
// under a ProbeCtx of locks that panics from its panicAt'th method call (0:
// never). Once call blocks it ends the ctx, and fails t if call does not then
// return, panics with anything but ErrCtxPanic, or ran a method of the ctx
// with one of locks held. It returns the number of method calls made.
func ProbeCall(t testing.TB, locks []TryLocker, panicAt int32, call func(ctx context.Context)) int32 {
	t.Helper()
	inner, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &ProbeCtx{Context: inner, Locks: locks, PanicAt: panicAt}
	returned := make(chan any, 1)
	go func() {
		defer func() { returned <- recover() }()
		call(ctx)
	}()
	synctest.Wait()
	cancel()
	synctest.Wait()
	select {
	case p := <-returned:
		if p != nil && p != ErrCtxPanic {
			t.Fatalf("the call panicked with %v", p)
		}
	default:
		t.Fatal("the call did not return once its ctx ended")
	}
	for _, h := range ctx.Held() {
		t.Error(h)
	}
	return ctx.Calls()
}

// A OnceCtx is a caller's Context whose PanicAt'th method call panics with
// ErrCtxPanic, once: the caller's code that panics, at a point the test
// chooses. (A ProbeCtx panics from then on, at every call: a primitive that
// makes contexts from the caller's would have it panic again in the context
// package's own timer goroutines, which no code of the library can catch.)
type OnceCtx struct {
	context.Context
	PanicAt int32

	calls atomic.Int32
}

func (c *OnceCtx) hook() {
	if c.calls.Add(1) == c.PanicAt {
		panic(ErrCtxPanic)
	}
}

// Err panics if it is the PanicAt'th call, then returns the Context's Err.
func (c *OnceCtx) Err() error { c.hook(); return c.Context.Err() }

// Done panics if it is the PanicAt'th call, then returns the Context's Done.
func (c *OnceCtx) Done() <-chan struct{} { c.hook(); return c.Context.Done() }

// Value panics if it is the PanicAt'th call, then returns the Context's
// Value.
func (c *OnceCtx) Value(key any) any { c.hook(); return c.Context.Value(key) }

// Deadline panics if it is the PanicAt'th call, then returns the Context's
// Deadline.
func (c *OnceCtx) Deadline() (time.Time, bool) { c.hook(); return c.Context.Deadline() }

// An ArmedCtx is a caller's Context that panics with ErrCtxPanic at its
// next method call once armed, once: the caller's code failing at a moment
// the test chooses (in a function the code under test calls, say).
type ArmedCtx struct {
	context.Context

	armed atomic.Bool
}

// Arm makes the next method call of c panic.
func (c *ArmedCtx) Arm() { c.armed.Store(true) }

func (c *ArmedCtx) hook() {
	if c.armed.CompareAndSwap(true, false) {
		panic(ErrCtxPanic)
	}
}

// Err panics if c is armed, then returns the Context's Err.
func (c *ArmedCtx) Err() error { c.hook(); return c.Context.Err() }

// Done panics if c is armed, then returns the Context's Done.
func (c *ArmedCtx) Done() <-chan struct{} { c.hook(); return c.Context.Done() }

// Value panics if c is armed, then returns the Context's Value.
func (c *ArmedCtx) Value(key any) any { c.hook(); return c.Context.Value(key) }

// Deadline panics if c is armed, then returns the Context's Deadline.
func (c *ArmedCtx) Deadline() (time.Time, bool) { c.hook(); return c.Context.Deadline() }
