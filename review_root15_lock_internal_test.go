package ctxsync

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/waitq"
)

// TestLockGiveUpAllocatesNothing: giving back, unused, a place that a
// Condition queued for a notified waiter makes no channel of its own to look
// at a grant without waiting: the package's closed one serves.
func TestLockGiveUpAllocatesNothing(t *testing.T) {
	l := new(Lock)
	require.True(t, l.TryLock())
	place := func() *waitq.Waiter[struct{}] {
		l.q.Lock()
		defer l.q.Unlock()
		return l.queueLocked(nil)
	}
	first := place() // keeps the queue busy, so that its nodes are reused
	giveUp := func() {
		l.giveUp(place()) // not handed the Lock: it leaves the queue
	}
	giveUp()
	require.Zero(t, testing.AllocsPerRun(100, giveUp))
	require.Equal(t, 1, l.Waiting())
	l.giveUp(first)
	require.Zero(t, l.Waiting())
	require.True(t, l.Locked())
	l.Unlock()
	require.True(t, l.TryLock(), "nothing left queued")
	l.Unlock()
}
