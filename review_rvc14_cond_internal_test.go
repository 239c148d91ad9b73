package ctxsync

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestConditionTookTurnAfterHeldPlaceUnlocked pins a hang of the relock's fast
// path after an Unlock by a goroutine that did not hold the Lock.
//
// The waiter of ticket 0 loads turn (0) and is about to TryLock. Meanwhile the
// waiter of ticket 1 settles places: the Lock is free, so it takes it for
// ticket 0 (relockHeld) and queues its own place; a goroutine that does not
// hold the Lock unlocks it, which hands it to ticket 1's place; ticket 1's
// waiter returns and unlocks. The Lock is free, so ticket 0's TryLock takes
// it, and its CAS of turn fails: tookTurn takes its place back, relockHeld.
//
// What was wrong: dropPlace treated relockHeld as a queued node handed the
// Lock, and waited on it (l.q.Wait(nil, &relockHeld)): a receive from the
// nil channel of a node that is never queued, so the waiter hung for good
// inside Wait, and marked the package-level relockHeld blocked. What is
// right: relockHeld stands for the Lock taken for the ticket, which the
// waiter holds now by its own TryLock; tookTurn returns with it held, and the
// Lock keeps working.
func TestConditionTookTurnAfterHeldPlaceUnlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCondition(nil)
		l := c.lock()
		c.tickets = 2 // tickets 0 and 1 notified
		c.q.Lock()
		p1 := c.settleLocked(l, 1) // ticket 1: the Lock is free, taken for ticket 0
		c.q.Unlock()
		require.Same(t, &relockHeld, c.places.slots[0])
		l.Unlock()      // the misuse: the Lock goes to ticket 1's place
		l.waitPlace(p1) // ticket 1 relocks,
		l.Unlock()      // returns and unlocks
		require.True(t, l.TryLock(), "ticket 0's fast path")
		returned := make(chan struct{})
		go func() {
			c.tookTurn(l, 0)
			close(returned)
		}()
		synctest.Wait()
		select {
		case <-returned:
		default:
			t.Fatal("tookTurn hangs on the place taken for ticket 0 (relockHeld)")
		}
		require.True(t, l.Locked())
		require.Zero(t, c.places.n)
		l.Unlock()
		require.True(t, l.TryLock(), "nothing left queued")
		l.Unlock()
	})
}
