package pool

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

// A caller's Context is the caller's code: no method of it may run while the
// pool's lock is held, and one that panics must leave the pool whole.
// probeCtx looks at the lock at each call, and panics from its panicAt'th
// call on (0: never).
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
		c.held = append(c.held, fmt.Sprintf("%s (call %d) ran with the pool's lock held", method, n))
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

// runAcquireCase makes an Acquire (or a Close) wait under a probeCtx, ends its
// ctx, and checks that the pool serves (or closes) as before.
func runAcquireCase(t *testing.T, closing bool, panicAt int32) int32 {
	var calls int32
	synctest.Test(t, func(t *testing.T) {
		bg := context.Background()
		p, err := New(Config[int]{
			New:     func(context.Context) (int, error) { return 1, nil },
			MaxSize: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		held, err := p.Acquire(bg)
		if err != nil {
			t.Fatal(err)
		}
		inner, cancel := context.WithCancel(bg)
		ctx := &probeCtx{Context: inner, lock: &p.q.Mutex, panicAt: panicAt}
		returned := make(chan any, 1)
		go func() {
			defer func() { returned <- recover() }()
			if closing {
				_ = p.Close(ctx)
				return
			}
			if r, err := p.Acquire(ctx); err == nil {
				r.Release()
			}
		}()
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case v := <-returned:
			if v != nil && v != errUserCtxPanic {
				t.Fatalf("the call panicked with %v", v)
			}
		default:
			t.Fatal("the call did not return once its ctx ended")
		}
		for _, h := range ctx.held {
			t.Error(h)
		}
		held.Release()
		if !closing {
			r, err := p.Acquire(bg)
			if err != nil {
				t.Fatal(err)
			}
			r.Release()
		}
		if err := p.Close(bg); err != nil {
			t.Fatal(err)
		}
		calls = ctx.calls.Load()
	})
	return calls
}

func TestAcquireCallerCtxNeverRunsUnderTheLock(t *testing.T) {
	for _, closing := range []bool{false, true} {
		t.Run(fmt.Sprintf("close=%v", closing), func(t *testing.T) {
			n := runAcquireCase(t, closing, 0)
			if n == 0 {
				t.Fatal("the call never looked at its ctx: the probe tested nothing")
			}
			for at := int32(1); at <= n; at++ {
				t.Run(fmt.Sprintf("panic at call %d of %d", at, n), func(t *testing.T) {
					runAcquireCase(t, closing, at)
				})
			}
		})
	}
}
