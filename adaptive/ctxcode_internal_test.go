package adaptive

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// A caller's Context is the caller's code: no method of it may run while the
// Limiter's lock is held, and one that panics must leave the Limiter whole,
// with no slot taken. testutil.ProbeCtx looks at the lock at each call, and
// panics from its PanicAt'th call on.
var errUserCtxPanic = testutil.ErrCtxPanic

// runAcquireCase runs an Acquire under a testutil.ProbeCtx on a Limiter of limit 1:
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
		ctx := &testutil.ProbeCtx{Context: inner, Locks: []testutil.TryLocker{&l.q.Mutex}, PanicAt: panicAt}
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
		for _, h := range ctx.Held() {
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
		calls = ctx.Calls()
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
