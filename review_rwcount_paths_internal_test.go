package ctxsync

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// doneHookCtx runs hook at its first Done call.
type doneHookCtx struct {
	context.Context
	ran  bool
	hook func()
}

func (c *doneHookCtx) Done() <-chan struct{} {
	if !c.ran {
		c.ran = true
		c.hook()
	}
	return c.Context.Done()
}

// TestRWLockEveryReleaseWraps: every path that clears the writer bit moves
// the count of releases on, and counts a wrap (see RWLock.wraps). Each case
// starts with the count so placed that the release it drives wraps it, and
// checks that the count wrapped, the wrap was counted once, and the lock is
// free.
func TestRWLockEveryReleaseWraps(t *testing.T) {
	top := int64(rwReleases)
	check := func(t *testing.T, rw *RWLock) {
		t.Helper()
		require.Zero(t, rw.state.Load(), "free, the count wrapped")
		require.Equal(t, uint64(1), rw.wraps.Load(), "the wrap counted once")
		require.True(t, rw.TryLock())
		rw.Unlock()
	}

	t.Run("Unlock", func(t *testing.T) {
		var rw RWLock
		rw.state.Store(top)
		require.True(t, rw.TryLock())
		rw.Unlock()
		check(t, &rw)
	})

	t.Run("Unlock beside a phantom reader", func(t *testing.T) {
		var rw RWLock
		rw.state.Store(top)
		require.True(t, rw.TryLock())
		rw.state.Add(rwReader) // a reader's fast path, about to find the writer
		rw.Unlock()            // the slow path: the state is not rwWriter alone
		rw.state.Add(-rwReader)
		check(t, &rw)
	})

	t.Run("Lock given back as its ctx ended", func(t *testing.T) {
		// Lock finds the lock held, and its ctx ends and the holder
		// frees it as it reads ctx.Done, before it locks the queue: it
		// takes the free lock there, sees done closed, and gives it back.
		var rw RWLock
		rw.state.Store(top - rwRelease)
		require.True(t, rw.TryLock())
		inner, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx := &doneHookCtx{Context: inner, hook: func() {
			cancel()
			rw.Unlock() // the count at its top
		}}
		require.Equal(t, context.Canceled, rw.Lock(ctx))
		check(t, &rw)
	})

	t.Run("Lock that gives up after the take", func(t *testing.T) {
		// keep's look finds ctx ended: keep unlocks.
		var rw RWLock
		rw.state.Store(top)
		inner, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx := &onceErrCtx{Context: inner, hook: cancel}
		require.Equal(t, context.Canceled, rw.Lock(ctx))
		check(t, &rw)
	})

	t.Run("Lock handed the lock as its ctx ended", func(t *testing.T) {
		// A queued writer, parked, is handed the lock; its ctx ends before
		// the hand-over's wake-up, which is sent once the queue is
		// unlocked: it wakes for its ctx, finds the grant in Cancel, and
		// hands the lock on.
		var rw RWLock
		rw.state.Store(top - rwRelease)
		require.True(t, rw.TryLock())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := make(chan error, 1)
		go func() { got <- rw.Lock(ctx) }()
		waitParkedIn(t, "(*RWLock).queueLocked")
		rw.q.Lock()
		rw.release() // the holder's unlock, by hand: the count at its top
		rw.dispatchLocked()
		require.Equal(t, int64(rwWriter), rw.state.Load()&rwWriter, "handed to the writer")
		cancel()
		waitLockingIn(t, "(*RWLock).queueLocked")
		rw.q.Unlock()
		require.Equal(t, context.Canceled, <-got)
		check(t, &rw)
	})
}

// waitParkedIn waits until a goroutine is parked in a select with fn on its
// stack.
func waitParkedIn(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for range 1_000_000 {
		n := runtime.Stack(buf, true)
		for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "[select") && strings.Contains(g, fn) {
				return
			}
		}
		runtime.Gosched()
	}
	t.Fatalf("no goroutine parked in a select in %s", fn)
}
