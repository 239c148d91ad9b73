package ctxsync

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// TestLockGiveUpAllocatesNothing: giving back, unused, a place that a
// Condition queued for a notified waiter makes no channel of its own to look
// at a grant without waiting: the package's closed one serves.
func TestLockGiveUpAllocatesNothing(t *testing.T) {
	l := new(Lock)
	require.True(t, l.TryLock())
	place := func() *waitq.Waiter[int64] {
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

// TestConditionSettleAfterMisusedUnlock: a notified waiter settling places
// takes a free Lock for the oldest ticket, whose waiter, meanwhile, took the
// Lock by its own fast path (before an Unlock by a goroutine that did not
// hold it freed it), moved turn on and unlocked, freeing the take made for
// it. The settling waiter's CAS of turn fails, and it gives back its take,
// which is gone already.
//
// What was wrong: the give-back (unlockLocked) panicked "Unlock of unlocked
// Lock" in the settling waiter, an innocent one, with the Condition's lock
// held: every later Wait, Notify or Waiting of the Condition hung. What is
// right: the one hold the Lock records was given back once, by the oldest
// ticket's Unlock; the settling waiter goes on, and takes the free Lock.
func TestConditionSettleAfterMisusedUnlock(t *testing.T) {
	c := NewCondition(nil)
	l := c.lock()
	c.tickets = 2 // tickets 0 and 1 notified
	settleHook = func(k uint64) {
		if k != 0 {
			return
		}
		// Ticket 0's waiter, whose TryLock came before the misused
		// Unlock: its CAS of turn lands, it returns from Wait and unlocks.
		require.True(t, c.turn.CompareAndSwap(0, 1))
		l.Unlock()
	}
	t.Cleanup(func() { settleHook = nil })

	var p *waitq.Waiter[int64]
	c.q.Lock()
	pv := testutil.PanicOf(func() { p = c.settleLocked(l, 1) })
	settleHook = nil
	if pv != nil {
		// Hang guard only: see whether the Condition's lock was left held.
		free := make(chan bool)
		go func() {
			if c.q.TryLock() {
				c.q.Unlock()
				free <- true
				return
			}
			free <- false
		}()
		t.Fatalf("settleLocked panicked %q; the Condition's lock left free: %v", pv, <-free)
	}
	c.q.Unlock()
	require.Nil(t, p, "ticket 1 took the free Lock")
	require.True(t, l.Locked())
	require.Equal(t, uint64(2), c.turn.Load())
	require.Zero(t, c.places.n)
	require.Zero(t, l.Waiting())
	l.Unlock()
	require.True(t, l.TryLock(), "nothing left queued")
	l.Unlock()
	c.Notify(1) // the Condition's lock is free
	require.Zero(t, c.Waiting())
}
