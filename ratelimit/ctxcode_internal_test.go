package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A caller's Context is the caller's code: no method of it may run while a
// limiter's internal lock is held, and one that panics must leave the limiter
// whole. probeCtx looks at the lock at each call, and panics from its
// panicAt'th call on (0: never).
type probeCtx struct {
	context.Context
	lock    *waitq.Mutex
	panicAt int32
	calls   atomic.Int32

	mu   sync.Mutex
	held []string
}

var errUserCtxPanic = fmt.Errorf("the caller's ctx panics")

func (c *probeCtx) hook(method string) {
	n := c.calls.Add(1)
	if !c.lock.TryLock() {
		c.mu.Lock()
		c.held = append(c.held, fmt.Sprintf("%s (call %d) ran with the limiter's lock held", method, n))
		c.mu.Unlock()
	} else {
		c.lock.Unlock()
	}
	if c.panicAt > 0 && n >= c.panicAt {
		panic(errUserCtxPanic)
	}
}

func (c *probeCtx) Err() error                  { c.hook("Err"); return c.Context.Err() }
func (c *probeCtx) Done() <-chan struct{}       { c.hook("Done"); return c.Context.Done() }
func (c *probeCtx) Value(key any) any           { c.hook("Value"); return c.Context.Value(key) }
func (c *probeCtx) Deadline() (time.Time, bool) { c.hook("Deadline"); return c.Context.Deadline() }

// runWaitCase makes a Wait of a TokenBucket, a SlidingWindow and a
// SlidingWindowCounter, with no event left, wait under a probeCtx (as the
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
		inner, cancel := context.WithCancel(bg)
		ctx := &probeCtx{Context: inner, lock: lock, panicAt: panicAt}
		returned := make(chan any, 1)
		go func() {
			defer func() { returned <- recover() }()
			_ = wait(ctx)
		}()
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case p := <-returned:
			if p != nil && p != errUserCtxPanic {
				t.Fatalf("Wait panicked with %v", p)
			}
		default:
			t.Fatal("Wait did not return once its ctx ended")
		}
		for _, h := range ctx.held {
			t.Error(h)
		}
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
		calls = ctx.calls.Load()
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
