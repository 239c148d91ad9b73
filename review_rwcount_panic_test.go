package ctxsync_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

var errLookPanics = errors.New("the caller's ctx panics")

// hookPanicCtx runs hook at its first Err call, and panics from its panicAt'th
// call on.
type hookPanicCtx struct {
	context.Context
	calls, panicAt int
	hook           func()
}

func (c *hookPanicCtx) Err() error {
	c.calls++
	if c.calls == 1 && c.hook != nil {
		c.hook()
	}
	if c.calls >= c.panicAt {
		panic(errLookPanics)
	}
	return c.Context.Err()
}

// TestRLockCtxErrPanicsOnEveryPath: RLock's look at ctx panics on each of its
// paths: the one look, the look again after a writer came and went during the
// first (rkeep), the look of a phantom that found the writer still in
// (rlockSlow), and the look of a reader that found the lock held at its load
// (rlockWait). Each time the lock is left whole: free once the test's writer,
// if any, unlocks, with nobody queued.
func TestRLockCtxErrPanicsOnEveryPath(t *testing.T) {
	for _, c := range []struct {
		name    string
		panicAt int
		hook    func(rw *ctxsync.RWLock) // at the first look
		held    bool                     // the test holds the write lock before RLock
		after   bool                     // and after it, to unlock then
	}{
		{name: "the one look", panicAt: 1},
		{name: "the look after a writer came and went", panicAt: 2, hook: func(rw *ctxsync.RWLock) {
			require.True(t, rw.TryLock())
			rw.Unlock()
		}},
		{name: "a phantom's look", panicAt: 2, hook: func(rw *ctxsync.RWLock) {
			require.True(t, rw.TryLock()) // in at the reader's add
		}, after: true},
		{name: "the look at a held lock", panicAt: 1, held: true, after: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rw := ctxsync.NewRWLock()
			if c.held {
				require.True(t, rw.TryLock())
			}
			ctx := &hookPanicCtx{Context: context.Background(), panicAt: c.panicAt}
			if c.hook != nil {
				ctx.hook = func() { c.hook(rw) }
			}
			require.PanicsWithValue(t, errLookPanics, func() { _ = rw.RLock(ctx) })
			require.Equal(t, c.panicAt, ctx.calls, "the path under test")
			if c.after {
				rw.Unlock()
			}
			require.Zero(t, rw.Waiting())
			require.True(t, rw.TryLock(), "left held")
			rw.Unlock()
			require.True(t, rw.TryRLock())
			rw.RUnlock()
		})
	}
}
