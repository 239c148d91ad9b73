package ctxsync

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// waitersLeft returns the waiters queued in wg, and whether its waiters flag
// is set.
func (wg *WaitGroup) waitersLeft() (int, bool) {
	wg.q.Lock()
	defer wg.q.Unlock()
	return wg.q.Len(), wg.state.Load()&wgWaiters != 0
}

// TestWaitGroupCancelledWaitLeavesNoWaiter: a Wait whose ctx ends leaves no
// place in the queue, and the last one clears the flag, so that the next
// zero costs one atomic add again.
func TestWaitGroupCancelledWaitLeavesNoWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg WaitGroup
		wg.Add(1)
		ctx, cancel := context.WithCancel(t.Context())
		res := make(chan error, 3)
		for range 3 {
			go func() { res <- wg.Wait(ctx) }()
		}
		synctest.Wait()
		n, flag := wg.waitersLeft()
		require.Equal(t, 3, n)
		require.True(t, flag)
		cancel()
		for range 3 {
			require.Equal(t, context.Canceled, <-res)
		}
		n, flag = wg.waitersLeft()
		require.Zero(t, n, "waiters left in the queue")
		require.False(t, flag, "the waiters flag is still set")
		wg.Done()
	})
}

// TestWaitGroupStaleZeroWakesNoLaterWaiter pins the epoch rule: an Add that
// brought the counter to zero, and is slow to look for waiters, must not wake
// a waiter that began after that zero. Here the only waiter of the zero gives
// up, the counter rises, and a new waiter queues; only then does the stale
// Add look. (Before the last waiter to give up moved the epoch on, the new
// waiter, under the same epoch, was woken by a zero that came before it
// began.)
func TestWaitGroupStaleZeroWakesNoLaterWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg WaitGroup
		wg.Add(1)
		ctx, cancel := context.WithCancel(t.Context())
		first := make(chan error, 1)
		go func() { first <- wg.Wait(ctx) }()
		synctest.Wait()

		stale := wg.state.Add(uint64(1<<64 - 1<<wgCountBits)) // a Done, up to its look at the flag
		require.Equal(t, int32(0), int32(stale>>wgCountBits))
		cancel()
		require.Equal(t, context.Canceled, <-first)
		wg.Add(1)
		second := make(chan error, 1)
		go func() { second <- wg.Wait(t.Context()) }()
		synctest.Wait()

		wg.wake(stale) // the Done goes on
		synctest.Wait()
		require.Empty(t, second, "woken by a zero that came before it began")
		wg.Done()
		require.NoError(t, <-second)
	})
}
