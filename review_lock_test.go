package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// TestReviewLockHandedOnAndFreedAfterCtxEnded: between the caller's look at
// its ctx and its take, the ctx ends, another goroutine takes the lock, a
// waiter queues, the lock is handed to the waiter (a hand-over, not a take
// from free) and the waiter frees it. The lock is free again, but it was
// freed after the ctx ended: the caller must not get it.
func TestReviewLockHandedOnAndFreedAfterCtxEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := ctxsync.NewLock()
		inner, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx := &hookCtx{Context: inner, hook: func() {
			cancel()
			require.NoError(t, l.Lock(context.Background()))
			go func() {
				require.NoError(t, l.Lock(context.Background()))
				l.Unlock()
			}()
			synctest.Wait()
			require.Equal(t, 1, l.Waiting())
			l.Unlock() // to the waiter, which frees it
			synctest.Wait()
			require.False(t, l.Locked())
		}}
		require.Equal(t, context.Canceled, l.Lock(ctx), "got a lock freed after its ctx ended")
		require.False(t, l.Locked(), "given back")
		require.True(t, l.TryLock())
		l.Unlock()
	})
}

// TestReviewLockTakenAndFreedWithCtxAlive: the same, the ctx alive: the
// caller gets the lock.
func TestReviewLockTakenAndFreedWithCtxAlive(t *testing.T) {
	l := ctxsync.NewLock()
	ctx := &hookCtx{Context: context.Background(), hook: func() {
		require.True(t, l.TryLock())
		l.Unlock()
	}}
	require.NoError(t, l.Lock(ctx))
	require.True(t, l.Locked())
	l.Unlock()
}

// TestReviewUnlockOfUnlockedAfterTakes: Unlock of an unlocked Lock panics
// after any number of takes, with waiters served before and after, and
// leaves the Lock whole: FIFO hand-over still works.
func TestReviewUnlockOfUnlockedAfterTakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := ctxsync.NewLock()
		for range 5 {
			require.NoError(t, l.Lock(context.Background()))
			l.Unlock()
			require.True(t, l.TryLock())
			l.Unlock()
			require.PanicsWithValue(t, "ctxsync: Unlock of unlocked Lock", l.Unlock)
		}
		require.NoError(t, l.Lock(context.Background()))
		var order []int
		for i := range 3 {
			go func() {
				require.NoError(t, l.Lock(context.Background()))
				order = append(order, i)
				l.Unlock()
			}()
			synctest.Wait()
		}
		require.False(t, l.TryLock(), "a newcomer overtook the waiters")
		l.Unlock()
		synctest.Wait()
		require.Equal(t, []int{0, 1, 2}, order)
		require.False(t, l.Locked())
		require.PanicsWithValue(t, "ctxsync: Unlock of unlocked Lock", l.Unlock)
		require.NoError(t, l.Lock(context.Background()))
		l.Unlock()
	})
}
