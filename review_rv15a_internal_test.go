package ctxsync

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// TestRV15aSettleGiveBackKeepsAnotherHold: as in
// TestConditionSettleAfterMisusedUnlock, the settling waiter's take for
// ticket 0 is freed by the Unlock of ticket 0's waiter, whose own take a
// misused Unlock let go. Before the settling waiter gives its take back, a
// third goroutine, which did nothing wrong, takes the free Lock. The give-back
// must leave that goroutine's hold alone: it unlocked it, and ticket 1's
// waiter then took the Lock too, two holders at once.
func TestRV15aSettleGiveBackKeepsAnotherHold(t *testing.T) {
	c := NewCondition(nil)
	l := c.lock()
	c.tickets = 2 // tickets 0 and 1 notified
	settleHook = func(k uint64) {
		if k != 0 {
			return
		}
		require.True(t, c.turn.CompareAndSwap(0, 1)) // ticket 0's fast path
		l.Unlock()                                   // ticket 0's waiter unlocks
		require.True(t, l.TryLock(), "the third goroutine takes the free Lock")
	}
	t.Cleanup(func() { settleHook = nil })

	var p *waitq.Waiter[int64]
	c.q.Lock()
	pv := testutil.PanicOf(func() { p = c.settleLocked(l, 1) })
	settleHook = nil
	require.Nil(t, pv)
	c.q.Unlock()
	require.NotNil(t, p, "the third goroutine holds the Lock: ticket 1 queues behind it")
	require.True(t, l.Locked())
	require.Equal(t, 1, l.Waiting())
	l.Unlock() // the third goroutine's: ticket 1's place is handed the Lock
	l.waitPlace(p)
	require.True(t, l.Locked())
	l.Unlock()
	require.True(t, l.TryLock(), "nothing left queued")
	l.Unlock()
}
