package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// RLock looks at its ctx once when no writer released the lock between the
// state it loaded before the look and its take. These tests put a writer, or
// a reader, between the look and the take (from the ctx's Err, which runs at
// the look), and check the reader's verdict.

// TestRLockHandedToWriterAndFreedAfterCtxEnded: between the reader's look
// and its take, its ctx ends, a writer takes the lock, a second writer
// queues, the lock is handed to it (a grant, not a take from free) and it
// frees it. The lock is free again, but it was freed after the ctx ended:
// the reader must not get it.
func TestRLockHandedToWriterAndFreedAfterCtxEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rw := ctxsync.NewRWLock()
		inner, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx := &hookCtx{Context: inner, hook: func() {
			cancel()
			require.NoError(t, rw.Lock(context.Background()))
			go func() {
				require.NoError(t, rw.Lock(context.Background()))
				rw.Unlock()
			}()
			synctest.Wait()
			require.Equal(t, 1, rw.Waiting())
			rw.Unlock() // to the waiter, which frees it
			synctest.Wait()
		}}
		require.Equal(t, context.Canceled, rw.RLock(ctx), "got a lock freed after its ctx ended")
		require.True(t, rw.TryLock(), "given back")
		rw.Unlock()
	})
}

// TestRLockReaderBetweenLookAndTake: a reader that comes and goes between the
// look and the take frees nothing a reader waits for: with the ctx alive or
// ended meanwhile, the reader enters on its one look, as it would had the
// other reader come before the look.
func TestRLockReaderBetweenLookAndTake(t *testing.T) {
	for _, end := range []bool{false, true} {
		rw := ctxsync.NewRWLock()
		inner, cancel := context.WithCancel(context.Background())
		ctx := &hookCtx{Context: inner, hook: func() {
			require.True(t, rw.TryRLock())
			rw.RUnlock()
			if end {
				cancel()
			}
		}}
		require.NoError(t, rw.RLock(ctx), "ended meanwhile: %v", end)
		require.False(t, rw.TryLock(), "held for reading")
		rw.RUnlock()
		require.True(t, rw.TryLock())
		rw.Unlock()
		cancel()
	}
}

// TestRLockWriterBetweenLookAndTakeCtxAlive: a writer takes and frees the
// lock between the look and the take, the ctx alive: the reader looks again
// and enters.
func TestRLockWriterBetweenLookAndTakeCtxAlive(t *testing.T) {
	rw := ctxsync.NewRWLock()
	calls := 0
	ctx := &countCtx{Context: context.Background(), calls: &calls, hook: func() {
		require.True(t, rw.TryLock())
		rw.Unlock()
	}}
	require.NoError(t, rw.RLock(ctx))
	require.Equal(t, 2, calls, "a writer was in: the reader looks again")
	require.False(t, rw.TryLock(), "held for reading")
	rw.RUnlock()

	calls = 0
	ctx.hook = nil
	require.NoError(t, rw.RLock(ctx))
	require.Equal(t, 1, calls, "no writer came: one look")
	rw.RUnlock()
}

// countCtx counts its Err calls and runs hook, if set, at the first.
type countCtx struct {
	context.Context
	calls *int
	hook  func()
}

func (c *countCtx) Err() error {
	err := c.Context.Err()
	if *c.calls++; *c.calls == 1 && c.hook != nil {
		c.hook()
	}
	return err
}
