package adaptive

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A caller's Context is the caller's code: no method of it may run while the
// Limiter's lock is held, and one that panics must leave the Limiter whole,
// with no slot taken. probeCtx looks at the lock at each call, and panics from
// its panicAt'th call on (0: never).
type probeCtx struct {
	context.Context
	l       *Limiter
	panicAt int32
	calls   atomic.Int32

	mu   sync.Mutex
	held []string
}

var errUserCtxPanic = fmt.Errorf("the caller's ctx panics")

func (c *probeCtx) hook(method string) {
	n := c.calls.Add(1)
	if !c.l.q.TryLock() {
		c.mu.Lock()
		c.held = append(c.held, fmt.Sprintf("%s (call %d) ran with the Limiter's lock held", method, n))
		c.mu.Unlock()
	} else {
		c.l.q.Unlock()
	}
	if c.panicAt > 0 && n >= c.panicAt {
		panic(errUserCtxPanic)
	}
}

func (c *probeCtx) Err() error                  { c.hook("Err"); return c.Context.Err() }
func (c *probeCtx) Done() <-chan struct{}       { c.hook("Done"); return c.Context.Done() }
func (c *probeCtx) Value(key any) any           { c.hook("Value"); return c.Context.Value(key) }
func (c *probeCtx) Deadline() (time.Time, bool) { c.hook("Deadline"); return c.Context.Deadline() }

// runAcquireCase runs an Acquire under a probeCtx on a Limiter of limit 1:
// with the slot free ("free"), or held, the caller queued and then cancelled
// ("cancel") or handed the slot ("grant"). MaxWait is bounded (its timer is
// a context made from the caller's) or not. After it, nothing is in flight or
// queued and the slot can be taken. It returns the ctx's calls.
func runAcquireCase(t *testing.T, mode string, wait time.Duration, panicAt int32) int32 {
	var calls int32
	synctest.Test(t, func(t *testing.T) {
		l := New(Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1, MaxWait: wait})
		bg := context.Background()
		var holder *Ticket
		if mode != "free" {
			holder, _ = l.Acquire(bg)
		}
		inner, cancel := context.WithCancel(bg)
		defer cancel()
		ctx := &probeCtx{Context: inner, l: l, panicAt: panicAt}
		returned := make(chan any, 1)
		go func() {
			defer func() { returned <- recover() }()
			if tk, err := l.Acquire(ctx); err == nil {
				tk.Ignore()
			}
		}()
		synctest.Wait()
		switch mode {
		case "cancel":
			cancel()
		case "grant":
			holder.Ignore()
		}
		synctest.Wait()
		select {
		case p := <-returned:
			if p != nil && p != errUserCtxPanic {
				t.Fatalf("Acquire panicked with %v", p)
			}
		default:
			t.Fatal("Acquire did not return")
		}
		for _, h := range ctx.held {
			t.Error(h)
		}
		if mode == "cancel" {
			holder.Ignore()
		}
		if n, w := l.InFlight(), l.Waiting(); n != 0 || w != 0 {
			t.Fatalf("InFlight %d, Waiting %d after the call, want 0, 0", n, w)
		}
		tk, err := l.Acquire(bg)
		if err != nil {
			t.Fatalf("Acquire after the call = %v", err)
		}
		tk.Ignore()
		calls = ctx.calls.Load()
	})
	return calls
}

func TestAcquireCallerCtxNeverRunsUnderTheLock(t *testing.T) {
	for _, mode := range []string{"free", "cancel", "grant"} {
		for _, wait := range []time.Duration{time.Hour, unboundedWait} {
			t.Run(fmt.Sprintf("%s/wait=%v", mode, wait), func(t *testing.T) {
				n := runAcquireCase(t, mode, wait, 0)
				if n == 0 {
					t.Fatal("Acquire never looked at its ctx: the probe tested nothing")
				}
				for at := int32(1); at <= n; at++ {
					t.Run(fmt.Sprintf("panic at call %d of %d", at, n), func(t *testing.T) {
						runAcquireCase(t, mode, wait, at)
					})
				}
			})
		}
	}
}
