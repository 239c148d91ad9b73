package ctxsync_test

// The tests of this file port CPython's tests of asyncio.Condition
// (Lib/test/test_asyncio/test_locks.py, ConditionTests, with the cases added
// upstream since for the wake-ups lost to cancellation) to ctxsync's
// Condition. Tasks, cancels and steps of the loop are as in
// port_asyncio_lock_test.go; each case is named after the peer's.
//
// Where our documented behaviour differs from asyncio's by design:
//   - wait_unacquired, wait_for_unacquired: a Wait or WaitFor without the
//     Lock held is misuse and panics ("ctxsync: ..."), and WaitFor checks
//     the Lock before it calls the predicate, so it panics even when the
//     predicate holds at once; asyncio raises RuntimeError, and only once it
//     must wait. Our predicate is a func() bool, so WaitFor returns an error,
//     not the predicate's value.
//   - notify_unacquired, notify_all_unacquired: Notify and NotifyAll may be
//     called without the Lock (documented); asyncio raises RuntimeError.
//   - wait_cancel_after_notify, cancelled_error_re_aquire: a waiter that was
//     notified and then cancelled while it re-locks returns nil (holding the
//     Lock): it took the notification, and the re-lock does not give up when
//     ctx ends (Condition.Wait's doc). asyncio raises CancelledError then.
//   - cancelled_error_wakeup: Go has no exception object to compare; Wait
//     returns ctx.Err() itself, unwrapped, and the cause stays in the ctx.
//   - wait_cancel_contested, cancelled_wakeup: a notification handed over as
//     the ctx ends is kept (nil) or passed on (ctx.Err()); either is
//     accepted, and the port checks that it is never lost.
//   - ambiguous_loops: a Condition has no event loop to mismatch. Its port
//     is the nearest rule of ours: one made outside every testing/synctest
//     bubble works inside one, after it, and in another.
//   - repr: there is no repr; Locked and Waiting report what it shows.
//   - context_manager: Lock with a deferred Unlock.

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// condRelocksInOrder tells whether waiters notified together take the Lock
// again in the order they were notified, as the peer's cases expect. They did
// not before the fix pinned by TestPortAsyncioConditionNotifiedRelockInOrder;
// with it false, requireRelockOrder checks only that every notified waiter
// got through.
const condRelocksInOrder = true

// requireRelockOrder checks the order in which notified waiters, each adding
// its number to a log under the Lock, took the Lock again.
func requireRelockOrder(t *testing.T, want, got []int) {
	t.Helper()
	if !condRelocksInOrder {
		require.ElementsMatch(t, want, got)
		return
	}
	require.Equal(t, want, got, "notified waiters take the Lock in the order they were notified")
}

// TestPortAsyncioConditionNotifiedRelockInOrder pins a defect found by the
// port of the peer's wait, notify and notify_all cases (they expect the
// results [1, 2, 3] and [1, 2]; ours came out [1, 3, 2] and [2, 1] about
// half the time).
//
// What was wrong: waiters that one Notify(n) or NotifyAll wakes together each
// queued again for the Lock on their own, in whatever order they are
// scheduled, so the youngest may take the Lock first. Notify picks the
// oldest waiters, as documented, but the order is lost on the way back to the
// Lock: with eight waiters notified at once the Lock went to them in order in
// none of forty runs. A waiter that keeps losing that race to younger ones,
// say under a WaitFor whose predicate only the first to run finds true,
// waits at the back again each time: it can starve, which the package's
// first-in-first-out promise is meant to rule out.
//
// What is right: the waiters notified together take the Lock in the order in
// which they were notified (asyncio gets this from its run queue). A fix
// that made Notify queue each waiter it wakes on the Lock at once, in order
// (commit d915497, reverted), passed the whole suite but made
// ConditionPingPong 3.3 times and ConditionBroadcast 4 times slower, with
// allocations where there were none: each place it queues on a quiet Lock is
// a new node, and the notifier's Unlock must hand over. The fix to try next
// queues lazily: the first notified waiter to run takes a free Lock with
// TryLock as now, or else queues places for itself and every waiter notified
// before or with it, in order, which then wait on them. That is the fix (see
// Condition.turn).
func TestPortAsyncioConditionNotifiedRelockInOrder(t *testing.T) {
	if !condRelocksInOrder {
		t.Skip("defect: waiters notified together may take the Lock out of order; a fix without the cost of d915497 is left for later")
	}
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		var got pyLog
		tasks := condWaiters(c, &got, 8)
		require.NoError(t, c.Lock(t.Context()))
		c.NotifyAll()
		c.Unlock()
		for _, tk := range tasks {
			require.NoError(t, tk.result())
		}
		require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, got.get())
	})
}

// TestPortAsyncioConditionWait: three tasks wait; a notified one returns only
// once it has the Lock again, and notified ones take it in the order they
// were notified. None of them unlocks: the test unlocks for each.
func TestPortAsyncioConditionWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		var got pyLog
		waiter := func(n int) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				if err := c.Lock(ctx); err != nil {
					return err
				}
				if err := c.Wait(ctx); err != nil {
					return err
				}
				got.add(n)
				return nil
			}
		}
		t1 := pyStart(waiter(1))
		t2 := pyStart(waiter(2))
		t3 := pyStart(waiter(3))
		require.Empty(t, got.get())
		require.False(t, c.Locked())

		require.NoError(t, c.Lock(t.Context()))
		c.Notify(1)
		synctest.Wait()
		require.Empty(t, got.get(), "notified, but the Lock is ours")
		require.True(t, c.Locked())

		c.Unlock()
		synctest.Wait()
		require.Equal(t, []int{1}, got.get())
		require.True(t, c.Locked())

		c.Notify(2)
		synctest.Wait()
		require.Equal(t, []int{1}, got.get())
		require.True(t, c.Locked())

		c.Unlock()
		synctest.Wait()
		if g := got.get(); condRelocksInOrder {
			require.Equal(t, []int{1, 2}, g, "the older of the two notified takes the Lock first")
		} else {
			require.Len(t, g, 2, "one of the two notified has the Lock")
		}
		require.True(t, c.Locked())

		c.Unlock()
		synctest.Wait()
		requireRelockOrder(t, []int{1, 2, 3}, got.get())
		require.True(t, c.Locked())
		for _, tk := range []*pyTask{t1, t2, t3} {
			require.NoError(t, tk.result())
		}
		c.Unlock()
	})
}

func TestPortAsyncioConditionWaitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		require.NoError(t, c.Lock(t.Context()))
		tk := pyStart(c.Wait)
		tk.cancel()
		require.Equal(t, context.Canceled, tk.result())
		require.Zero(t, c.Waiting())
		require.True(t, c.Locked(), "Wait returns holding the Lock")
		c.Unlock()
	})
}

// TestPortAsyncioConditionWaitCancelContested: the waiter is notified, and
// its ctx ends while the Lock is still ours. Whatever Wait returns, it
// returns holding the Lock.
func TestPortAsyncioConditionWaitCancelContested(t *testing.T) {
	testutil.OneProcessor(t) // the waiter does not run between Notify and the cancel
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		require.NoError(t, c.Lock(t.Context()))
		tk := pyStart(c.Wait)
		require.False(t, c.Locked())

		require.NoError(t, c.Lock(t.Context()))
		require.True(t, c.Locked())
		c.Notify(1)
		tk.cancel()
		c.Unlock()
		if err := tk.result(); err != nil {
			require.Equal(t, context.Canceled, err)
		}
		require.True(t, c.Locked())
		require.Zero(t, c.Waiting())
		c.Unlock()
	})
}

// TestPortAsyncioConditionWaitCancelAfterNotify (CPython bpo-32841): the
// waiter is notified, waits for the Lock, and is cancelled there. It returns
// nil, holding the Lock: it took the notification, and the re-lock does not
// give up (see the divergences above).
func TestPortAsyncioConditionWaitCancelAfterNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		waited := false
		tk := pyStart(func(ctx context.Context) error {
			if err := c.Lock(ctx); err != nil {
				return err
			}
			defer c.Unlock()
			waited = true
			return c.Wait(ctx)
		})
		require.NoError(t, c.Lock(t.Context()))
		c.Notify(1)
		synctest.Wait() // the waiter now waits for the Lock
		require.Zero(t, c.Waiting())
		tk.cancel()
		synctest.Wait()
		require.False(t, tk.finished(), "the re-lock does not give up")
		c.Unlock()
		require.NoError(t, tk.result())
		require.True(t, waited)
		require.False(t, c.Locked())
	})
}

func TestPortAsyncioConditionWaitUnacquired(t *testing.T) {
	c := ctxsync.NewCondition(nil)
	testutil.RequirePanicPrefix(t, "ctxsync: Condition.Wait without holding its Lock", func() {
		_ = c.Wait(context.Background())
	})
	require.False(t, c.Locked())
	require.Zero(t, c.Waiting())
}

func TestPortAsyncioConditionWaitFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		presult := false // guarded by c's Lock
		var got pyLog
		tk := pyStart(func(ctx context.Context) error {
			if err := c.Lock(ctx); err != nil {
				return err
			}
			if err := c.WaitFor(ctx, func() bool { return presult }); err != nil {
				return err
			}
			got.add(1)
			c.Unlock()
			return nil
		})
		require.Empty(t, got.get())

		require.NoError(t, c.Lock(t.Context()))
		c.Notify(1)
		c.Unlock()
		synctest.Wait()
		require.Empty(t, got.get(), "woken, the predicate false: waiting again")

		require.NoError(t, c.Lock(t.Context()))
		presult = true
		c.Notify(1)
		c.Unlock()
		synctest.Wait()
		require.Equal(t, []int{1}, got.get())
		require.True(t, tk.finished())
		require.NoError(t, tk.result())
	})
}

func TestPortAsyncioConditionWaitForUnacquired(t *testing.T) {
	c := ctxsync.NewCondition(nil)
	for _, v := range []bool{true, false} {
		testutil.RequirePanicPrefix(t, "ctxsync: Condition.WaitFor without holding its Lock", func() {
			_ = c.WaitFor(context.Background(), func() bool { return v })
		})
	}
	require.False(t, c.Locked())
	require.Zero(t, c.Waiting())
}

// condWaiters starts n tasks that each lock c, Wait, add their number to got
// and unlock, one after the other so that they queue in order.
func condWaiters(c *ctxsync.Condition, got *pyLog, n int) []*pyTask {
	tasks := make([]*pyTask, n)
	for i := range n {
		tasks[i] = pyStart(func(ctx context.Context) error {
			if err := c.Lock(ctx); err != nil {
				return err
			}
			defer c.Unlock()
			if err := c.Wait(ctx); err != nil {
				return err
			}
			got.add(i + 1)
			return nil
		})
	}
	return tasks
}

func TestPortAsyncioConditionNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		var got pyLog
		tasks := condWaiters(c, &got, 3)
		require.Empty(t, got.get())

		require.NoError(t, c.Lock(t.Context()))
		c.Notify(1)
		c.Unlock()
		synctest.Wait()
		require.Equal(t, []int{1}, got.get())

		require.NoError(t, c.Lock(t.Context()))
		c.Notify(1)
		c.Notify(2048)
		c.Unlock()
		synctest.Wait()
		requireRelockOrder(t, []int{1, 2, 3}, got.get())
		for _, tk := range tasks {
			require.NoError(t, tk.result())
		}
	})
}

func TestPortAsyncioConditionNotifyAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		var got pyLog
		tasks := condWaiters(c, &got, 2)
		require.Empty(t, got.get())

		require.NoError(t, c.Lock(t.Context()))
		c.NotifyAll()
		c.Unlock()
		synctest.Wait()
		requireRelockOrder(t, []int{1, 2}, got.get())
		for _, tk := range tasks {
			require.NoError(t, tk.result())
		}
	})
}

// TestPortAsyncioConditionNotifyUnacquired: Notify and NotifyAll without the
// Lock held, and with nobody waiting, do nothing; a negative count is
// misuse.
func TestPortAsyncioConditionNotifyUnacquired(t *testing.T) {
	c := ctxsync.NewCondition(nil)
	c.Notify(1)
	require.False(t, c.Locked())
	testutil.RequirePanicPrefix(t, "ctxsync: Condition.Notify with negative count", func() { c.Notify(-1) })
}

func TestPortAsyncioConditionNotifyAllUnacquired(t *testing.T) {
	c := ctxsync.NewCondition(nil)
	c.NotifyAll()
	require.False(t, c.Locked())
	require.Zero(t, c.Waiting())
}

func TestPortAsyncioConditionRepr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		require.False(t, c.Locked())
		require.NoError(t, c.Lock(t.Context()))
		require.True(t, c.Locked())
		c.Unlock()
		wait := func(ctx context.Context) error {
			if err := c.Lock(ctx); err != nil {
				return err
			}
			defer c.Unlock()
			return c.Wait(ctx)
		}
		t1 := pyStart(wait)
		require.Equal(t, 1, c.Waiting())
		t2 := pyStart(wait)
		require.Equal(t, 2, c.Waiting())
		c.NotifyAll()
		require.NoError(t, t1.result())
		require.NoError(t, t2.result())
		require.Zero(t, c.Waiting())
		require.False(t, c.Locked())
	})
}

func TestPortAsyncioConditionContextManager(t *testing.T) {
	var c ctxsync.Condition
	func() {
		require.NoError(t, c.Lock(context.Background()))
		defer c.Unlock()
		require.True(t, c.Locked())
	}()
	require.False(t, c.Locked())
}

// TestPortAsyncioConditionExplicitLock: a Condition on a Lock, however it was
// made, is locked and unlocked through either of them.
func TestPortAsyncioConditionExplicitLock(t *testing.T) {
	f := func(t *testing.T, l *ctxsync.Lock, c *ctxsync.Condition) {
		if l == nil {
			l = new(ctxsync.Lock)
		}
		if c == nil {
			c = ctxsync.NewCondition(l)
		}
		ctx := context.Background()
		require.False(t, l.Locked())
		require.False(t, c.Locked())
		require.NoError(t, c.Lock(ctx))
		require.True(t, l.Locked())
		require.True(t, c.Locked())
		c.Unlock()
		require.False(t, l.Locked())
		require.False(t, c.Locked())
		require.NoError(t, l.Lock(ctx))
		require.True(t, l.Locked())
		require.True(t, c.Locked())
		l.Unlock()
		require.False(t, l.Locked())
		require.False(t, c.Locked())
	}
	t.Run("NoneGiven", func(t *testing.T) { f(t, nil, nil) })
	t.Run("LockGiven", func(t *testing.T) { f(t, new(ctxsync.Lock), nil) })
	t.Run("BothGiven", func(t *testing.T) {
		l := new(ctxsync.Lock)
		f(t, l, ctxsync.NewCondition(l))
	})
}

// TestPortAsyncioConditionAmbiguousLoops: asyncio refuses a Condition bound
// to another loop. Ours has no loop: one made outside every bubble serves a
// waiter in a bubble, then one outside, then one in a second bubble.
func TestPortAsyncioConditionAmbiguousLoops(t *testing.T) {
	l := new(ctxsync.Lock)
	c := ctxsync.NewCondition(l)
	round := func(t *testing.T) {
		done := make(chan error, 1)
		go func() {
			if err := c.Lock(context.Background()); err != nil {
				done <- err
				return
			}
			err := c.Wait(context.Background())
			c.Unlock()
			done <- err
		}()
		for c.Waiting() == 0 {
			runtime.Gosched() // outside a bubble, there is no synctest.Wait
		}
		require.NoError(t, c.Lock(context.Background()))
		c.Notify(1)
		c.Unlock()
		require.NoError(t, <-done)
		require.False(t, l.Locked())
	}
	synctest.Test(t, round)
	round(t)
	synctest.Test(t, round)
}

func TestPortAsyncioConditionTimeoutInBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		require.NoError(t, c.Lock(t.Context()))
		defer c.Unlock()
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		require.Equal(t, context.DeadlineExceeded, c.Wait(ctx))
		require.True(t, c.Locked())
		require.Zero(t, c.Waiting())
	})
}

// TestPortAsyncioConditionCancelledErrorWakeup: cancelled while it waits,
// WaitFor returns ctx.Err() itself, unwrapped, holding the Lock; the cause
// the canceller gave stays in the ctx.
func TestPortAsyncioConditionCancelledErrorWakeup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		cause := errors.New("foo")
		ctx, cancel := context.WithCancelCause(t.Context())
		done := make(chan error, 1)
		go func() {
			if err := c.Lock(ctx); err != nil {
				done <- err
				return
			}
			err := c.WaitFor(ctx, func() bool { return false })
			if !c.Locked() {
				err = errors.New("WaitFor returned without the Lock")
			}
			c.Unlock()
			done <- err
		}()
		synctest.Wait()
		cancel(cause)
		err := <-done
		require.Equal(t, context.Canceled, err)
		require.Equal(t, ctx.Err(), err)
		require.Equal(t, cause, context.Cause(ctx))
		require.False(t, c.Locked())
	})
}

// TestPortAsyncioConditionCancelledErrorReAquire: notified with the predicate
// true, the waiter is cancelled while it waits for the Lock again. WaitFor
// returns nil, holding the Lock (see the divergences above).
func TestPortAsyncioConditionCancelledErrorReAquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		wake := false // guarded by c's Lock
		tk := pyStart(func(ctx context.Context) error {
			if err := c.Lock(ctx); err != nil {
				return err
			}
			defer c.Unlock()
			if err := c.WaitFor(ctx, func() bool { return wake }); err != nil {
				return err
			}
			if !wake || !c.Locked() {
				return errors.New("WaitFor returned nil without the predicate or the Lock")
			}
			return nil
		})
		require.NoError(t, c.Lock(t.Context()))
		wake = true
		c.Notify(1)
		synctest.Wait() // the waiter waits for the Lock now
		tk.cancel()
		c.Unlock()
		require.NoError(t, tk.result())
		require.False(t, c.Locked())
	})
}

// cancelledWakeup runs the peer's two consumers of a count guarded by a
// Condition: one item is produced and one consumer notified, and the
// first consumer is cancelled just before the Notify (before) or just after
// it (after), whichever is not nil. Whichever consumer takes the
// notification, the item is consumed: a notification that meets a
// cancellation is not lost.
func cancelledWakeup(t *testing.T, before, after func(c *ctxsync.Condition, first *pyTask)) {
	c := ctxsync.NewCondition(nil)
	state := 0 // guarded by c's Lock
	consumer := func(ctx context.Context) error {
		if err := c.Lock(ctx); err != nil {
			return err
		}
		defer c.Unlock()
		for {
			if err := c.WaitFor(ctx, func() bool { return state != 0 }); err != nil {
				return err
			}
			if state < 0 {
				return nil
			}
			state--
		}
	}
	c0 := pyStart(consumer)
	c1 := pyStart(consumer)
	require.NoError(t, c.Lock(t.Context()))
	state++
	if before != nil {
		before(c, c0)
	}
	c.Notify(1)
	if after != nil {
		after(c, c0)
	}
	// Wait for the item to be consumed. Nobody notifies this waiter: it
	// times out (virtual time), then looks.
	ctx, stop := context.WithTimeout(t.Context(), 10*time.Millisecond)
	err := c.WaitFor(ctx, func() bool { return state == 0 })
	stop()
	if err != nil {
		require.Equal(t, context.DeadlineExceeded, err)
	}
	require.Zero(t, state, "the item was not consumed: the notification was lost")
	state = -1
	c.NotifyAll()
	c.Unlock()
	if err := c0.result(); err != nil {
		require.Equal(t, context.Canceled, err)
	}
	require.NoError(t, c1.result())
}

// TestPortAsyncioConditionCancelledWakeup: the notified consumer is cancelled
// before it has run. The subtest CancelFirst is the other order: its ctx
// ends before the Notify, which then passes over it.
func TestPortAsyncioConditionCancelledWakeup(t *testing.T) {
	testutil.OneProcessor(t)
	cancel := func(_ *ctxsync.Condition, first *pyTask) { first.cancel() }
	t.Run("NotifyFirst", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) { cancelledWakeup(t, nil, cancel) })
	})
	t.Run("CancelFirst", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) { cancelledWakeup(t, cancel, nil) })
	})
}

// TestPortAsyncioConditionCancelledWakeupRelock: the notified consumer is
// cancelled while it waits to lock again.
func TestPortAsyncioConditionCancelledWakeupRelock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancelledWakeup(t, nil, func(c *ctxsync.Condition, first *pyTask) {
			synctest.Wait() // it wakes and waits for the Lock, which is ours
			require.Equal(t, 1, c.Waiting(), "one consumer left waiting for a notification")
			first.cancel()
		})
	})
}
