package ctxsync_test

import (
	"context"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestConditionWaitForPredPanics: a predicate that panics, at its first call
// or after a wake-up, leaves the Condition whole: the panic reaches the
// caller, which holds the Lock, and nobody waits for a notification.
func TestConditionWaitForPredPanics(t *testing.T) {
	for _, panicAt := range []int{1, 2} {
		synctest.Test(t, func(t *testing.T) {
			c := ctxsync.NewCondition(nil)
			calls := 0
			pred := func() bool {
				if calls++; calls == panicAt {
					panic("pred panicked")
				}
				return false
			}
			result := make(chan any, 1)
			go func() {
				require.NoError(t, c.Lock(t.Context()))
				defer func() {
					result <- recover()
					assert.True(t, c.Locked(), "the Lock was not held when the panic went on")
					assert.Equal(t, 0, c.Waiting())
					c.Unlock()
				}()
				_ = c.WaitFor(t.Context(), pred)
			}()
			synctest.Wait()
			if panicAt == 2 {
				require.Equal(t, 1, c.Waiting())
				c.Notify(1)
			}
			require.Equal(t, "pred panicked", <-result)
			synctest.Wait()
			require.False(t, c.Locked())
			require.True(t, c.TryLock(), "the Condition is usable after the panic")
			c.Unlock()
		})
	}
}

// TestConditionWaitForPredNotifies: a predicate may notify (no internal lock
// is held while it runs); the waiters it wakes take the Lock after WaitFor's
// caller releases it.
func TestConditionWaitForPredNotifies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		woken := make(chan error, 2)
		for range 2 {
			waitAsync(c, t.Context(), "", func(_ string, err error) { woken <- err })
			synctest.Wait()
		}
		require.Equal(t, 2, c.Waiting())
		require.NoError(t, c.Lock(t.Context()))
		first := true
		require.NoError(t, c.WaitFor(t.Context(), func() bool {
			if first {
				first = false
				c.Notify(1)
				return true
			}
			return true
		}))
		require.Equal(t, 1, c.Waiting())
		require.NoError(t, c.WaitFor(t.Context(), func() bool { c.NotifyAll(); return true }))
		require.Equal(t, 0, c.Waiting())
		synctest.Wait()
		require.Empty(t, woken, "woken waiters returned without the Lock")
		c.Unlock()
		require.NoError(t, <-woken)
		require.NoError(t, <-woken)
	})
}

// TestConditionNotifyCounts: Notify(0) wakes nobody, Notify(math.MaxInt) wakes
// everyone without looping on, negative counts panic.
func TestConditionNotifyCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		woken := make(chan error, 3)
		for range 3 {
			waitAsync(c, t.Context(), "", func(_ string, err error) { woken <- err })
		}
		synctest.Wait()
		c.Notify(0)
		synctest.Wait()
		require.Equal(t, 3, c.Waiting())
		c.Notify(math.MaxInt)
		synctest.Wait()
		require.Equal(t, 0, c.Waiting())
		require.Len(t, woken, 3)
		c.Notify(math.MaxInt) // nobody waits
		for _, n := range []int{-1, math.MinInt} {
			require.PanicsWithValue(t, "ctxsync: Condition.Notify with negative count", func() { c.Notify(n) })
		}
	})
}

// TestConditionZeroValue: the zero Condition has a Lock of its own and works.
func TestConditionZeroValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c ctxsync.Condition
		require.False(t, c.Locked())
		require.Equal(t, 0, c.Waiting())
		c.Notify(1)
		c.NotifyAll()
		require.True(t, c.TryLock())
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		require.Equal(t, context.DeadlineExceeded, c.Wait(ctx))
		require.True(t, c.Locked())
		c.Unlock()
		require.PanicsWithValue(t, "ctxsync: Condition.Wait without holding its Lock", func() { _ = c.Wait(t.Context()) })
	})
}

// TestConditionWaitUnlockedByOther documents what Wait can check: that the
// Lock is locked, not who locked it (a Lock is not tied to a goroutine). A
// goroutine that locked it may hand it to another, which waits, and the Wait
// returns holding it for that other goroutine.
func TestConditionWaitUnlockedByOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		require.NoError(t, c.Lock(t.Context())) // locked here...
		done := make(chan error, 1)
		go func() {
			done <- c.Wait(t.Context()) // ...waited on there: allowed
			c.Unlock()
		}()
		synctest.Wait()
		require.False(t, c.Locked(), "Wait released the Lock")
		c.Notify(1)
		require.NoError(t, <-done)
		synctest.Wait()
		require.False(t, c.Locked())
	})
}

// TestConditionAcrossBubbles: a Condition made outside a synctest bubble
// serves waits inside one, and one made inside keeps working after it ends.
func TestConditionAcrossBubbles(t *testing.T) {
	waitOnce := func(t *testing.T, c *ctxsync.Condition, inBubble bool) {
		done := make(chan error, 1)
		ready := make(chan struct{})
		go func() {
			_ = c.Lock(context.Background())
			close(ready)
			done <- c.Wait(context.Background())
			c.Unlock()
		}()
		<-ready
		if inBubble {
			synctest.Wait()
		} else {
			for c.Waiting() == 0 {
				runtime.Gosched()
			}
		}
		c.Notify(1)
		require.NoError(t, <-done)
	}
	outside := ctxsync.NewCondition(nil)
	waitOnce(t, outside, false)
	var inside *ctxsync.Condition
	synctest.Test(t, func(t *testing.T) {
		waitOnce(t, outside, true)
		inside = ctxsync.NewCondition(nil)
		waitOnce(t, inside, true)
	})
	waitOnce(t, inside, false)
	waitOnce(t, outside, false)
}

// TestConditionNotifySkipsEndedWaiter: a notification never goes to a waiter
// whose ctx has already ended, even one that has not run since: Notify(1)
// wakes the next waiter at once, and the one whose ctx ended returns its error.
func TestConditionNotifySkipsEndedWaiter(t *testing.T) {
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		ctx, cancel := context.WithCancel(t.Context())
		results := make(chan error, 2)
		log := func(_ string, err error) { results <- err }
		waitAsync(c, ctx, "ended", log)
		synctest.Wait()
		waitAsync(c, t.Context(), "live", log)
		synctest.Wait()
		cancel()
		c.Notify(1) // before the first waiter has run again
		require.Equal(t, 0, c.Waiting(), "the notification went to the waiter whose ctx had ended")
		got := []error{<-results, <-results}
		require.ElementsMatch(t, []error{context.Canceled, nil}, got)
	})
}

// TestConditionWaitMisuseLeavesNoWaiter: a Wait by a goroutine that does not
// hold the Lock, racing the holder's Unlock, may find the Lock unlocked when
// it unlocks it, and panic. The panic must leave no waiter queued behind, to
// swallow a notification meant for a real one.
func TestConditionWaitMisuseLeavesNoWaiter(t *testing.T) {
	c := ctxsync.NewCondition(nil)
	bg := context.Background()
	lateUnlocks := 0
	for range testutil.HammerRounds(3000) {
		require.NoError(t, c.Lock(bg))
		ctx, cancel := context.WithCancel(bg)
		holder := make(chan any, 1)
		go func() {
			defer func() { holder <- recover() }()
			defer cancel() // ends the Wait, if it got to wait
			c.Unlock()
		}()
		var waitPanic any
		func() {
			defer func() { waitPanic = recover() }()
			_ = c.Wait(ctx)
		}()
		holderPanic := <-holder
		switch {
		case waitPanic == nil && holderPanic == nil:
			// The holder unlocked, then ended ctx, between the Wait's
			// look at the Lock and its look at ctx: it failed at once,
			// without unlocking.
		case waitPanic == nil:
			// The Wait unlocked the holder's Lock, waited, and locked
			// again; the holder's Unlock found it unlocked.
			require.Equal(t, "ctxsync: Unlock of unlocked Lock", holderPanic)
			c.Unlock()
		case waitPanic == "ctxsync: Unlock of unlocked Lock":
			lateUnlocks++
		}
		require.Equal(t, 0, c.Waiting(), "a Wait that panicked left a waiter queued")
		require.False(t, c.Locked())
	}
	t.Logf("%d Waits found the Lock unlocked as they unlocked it", lateUnlocks)
}
