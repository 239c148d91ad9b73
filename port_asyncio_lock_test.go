package ctxsync_test

// The tests of this file port CPython's tests of asyncio.Lock and
// asyncio.Event (Lib/test/test_asyncio/test_locks.py, LockTests and
// EventTests) to ctxsync's Lock and Event. An asyncio task is a goroutine of
// a testing/synctest bubble with a ctx of its own (pyTask): the task's cancel
// is that ctx's cancel, and a step that lets the event loop run is
// synctest.Wait. Each case is named after the peer's.
//
// Where our documented behaviour differs from asyncio's by design:
//   - release_not_acquired: Unlock of an unlocked Lock is misuse and panics
//     ("ctxsync: ..."); asyncio raises RuntimeError.
//   - repr (Lock, Event): there is no repr; Locked and Waiting (Lock) and
//     IsSet (Event) report what it shows. An Event keeps no queue and has no
//     count of waiters, so the waiters part of Event's repr has no port.
//   - wait_cancel (Event): with no queue there is nothing to look at after a
//     cancelled Wait but its error and a later Set that still works.
//   - wait (Event): Set wakes every waiter at once by closing one channel;
//     asyncio's order of the results ([3, 1, 2], an artefact of its loop's
//     scheduling) has no counterpart, and the port checks that all three
//     wake.
//   - finished_waiter_cancelled: a waiter that has not run since its ctx
//     ended is never handed the lock (package rule); the port adds the other
//     order, the lock handed over and then the ctx ended, where Lock may keep
//     it or pass it on, and checks that it is never lost.
//   - context_manager: Go has no async with; the port is Lock with a
//     deferred Unlock, and a panic inside it.
//
// Skipped, with no counterpart:
//   - lock: "await lock" is a type error that Go's compiler reports.
//   - lock_doesnt_accept_loop_parameter: there is no event loop to pass.
//   - lock_by_with_statement: Go has no with statement to misuse.

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// A pyTask stands for an asyncio task: a goroutine of the current bubble that
// runs its function under a ctx of its own, which cancel ends.
type pyTask struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// pyGo starts f as a task and returns at once, before it has run.
func pyGo(f func(ctx context.Context) error) *pyTask {
	ctx, cancel := context.WithCancel(context.Background())
	tk := &pyTask{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(tk.done)
		tk.err = f(ctx)
	}()
	return tk
}

// pyStart starts f as a task and lets the bubble run until every goroutine in
// it is blocked: the task has queued, behind those started before it, or has
// returned.
func pyStart(f func(ctx context.Context) error) *pyTask {
	tk := pyGo(f)
	synctest.Wait()
	return tk
}

// finished reports whether the task has returned.
func (tk *pyTask) finished() bool {
	select {
	case <-tk.done:
		return true
	default:
		return false
	}
}

// result waits for the task to return and returns its error.
func (tk *pyTask) result() error {
	<-tk.done
	tk.cancel()
	return tk.err
}

// A pyLog is the list that the peer's tasks append to.
type pyLog struct {
	mu sync.Mutex
	s  []int
}

func (l *pyLog) add(v int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s = append(l.s, v)
}

func (l *pyLog) get() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.s)
}

// sorted returns the log in increasing order, for steps whose tasks run in
// parallel and may append in any order.
func (l *pyLog) sorted() []int {
	s := l.get()
	slices.Sort(s)
	return s
}

func TestPortAsyncioLockRepr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		require.False(t, l.Locked())
		require.NoError(t, l.Lock(t.Context()))
		require.True(t, l.Locked())
		require.Zero(t, l.Waiting())
		tk := pyStart(l.Lock)
		require.Equal(t, 1, l.Waiting())
		l.Unlock()
		require.NoError(t, tk.result())
		require.True(t, l.Locked(), "handed to the waiter")
		require.Zero(t, l.Waiting())
		l.Unlock()
		require.False(t, l.Locked())
	})
}

// TestPortAsyncioLockAcquire: waiters get the lock in the order they came,
// and one that comes while the lock is being handed over waits its turn.
func TestPortAsyncioLockAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		var got pyLog
		require.NoError(t, l.Lock(t.Context()))
		take := func(n int) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				if err := l.Lock(ctx); err != nil {
					return err
				}
				got.add(n)
				return nil
			}
		}
		t1 := pyStart(take(1))
		t2 := pyStart(take(2))
		require.Empty(t, got.get())

		l.Unlock()
		synctest.Wait()
		require.Equal(t, []int{1}, got.get())
		synctest.Wait()
		require.Equal(t, []int{1}, got.get())

		// The peer creates the third task before the release and lets it
		// run after: whether it queues before or after the Unlock, the
		// second task is ahead of it.
		t3 := pyGo(take(3))
		l.Unlock()
		synctest.Wait()
		require.Equal(t, []int{1, 2}, got.get())

		l.Unlock()
		synctest.Wait()
		require.Equal(t, []int{1, 2, 3}, got.get())
		for _, tk := range []*pyTask{t1, t2, t3} {
			require.True(t, tk.finished())
			require.NoError(t, tk.result())
		}
		l.Unlock()
	})
}

func TestPortAsyncioLockAcquireCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		require.NoError(t, l.Lock(t.Context()))
		tk := pyStart(l.Lock)
		tk.cancel()
		require.Equal(t, context.Canceled, tk.result())
		require.Zero(t, l.Waiting(), "the cancelled waiter left the queue")
		require.True(t, l.Locked(), "still ours")
		l.Unlock()
		require.True(t, l.TryLock(), "free, with nobody queued")
		l.Unlock()
	})
}

// TestPortAsyncioLockCancelRace: A holds the lock, B and C wait. B is
// cancelled and A unlocks in the same step, before B runs: the lock goes to
// C, and B, whose ctx ended before the hand-over, fails.
func TestPortAsyncioLockCancelRace(t *testing.T) {
	testutil.OneProcessor(t) // B cannot run between its cancel and the Unlock
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		fa := make(chan struct{})
		lockit := func(blocker chan struct{}) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				if err := l.Lock(ctx); err != nil {
					return err
				}
				defer l.Unlock()
				if blocker != nil {
					<-blocker
				}
				return nil
			}
		}
		ta := pyStart(lockit(fa))
		require.True(t, l.Locked())
		tb := pyStart(lockit(nil))
		require.Equal(t, 1, l.Waiting())
		tc := pyStart(lockit(nil))
		require.Equal(t, 2, l.Waiting())

		tb.cancel()
		close(fa)
		synctest.Wait()
		require.NoError(t, ta.result())
		require.Equal(t, context.Canceled, tb.result())
		require.NoError(t, tc.result(), "C got the lock B gave up")
		require.False(t, l.Locked())
		require.Zero(t, l.Waiting())
	})
}

// TestPortAsyncioLockCancelReleaseRace (CPython issue 32734): the lock is
// held and three wait; the first is cancelled and the lock unlocked in one
// step. Only one of the others gets the lock, the second; the third waits
// on.
func TestPortAsyncioLockCancelReleaseRace(t *testing.T) {
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		var mu sync.Mutex
		locks, calls := 0, 0
		lockit := func(ctx context.Context) error {
			mu.Lock()
			calls++
			mu.Unlock()
			if err := l.Lock(ctx); err != nil {
				return err
			}
			mu.Lock()
			locks++
			mu.Unlock()
			return nil
		}
		require.NoError(t, l.Lock(t.Context()))
		t1 := pyStart(lockit)
		t2 := pyStart(lockit)
		t3 := pyStart(lockit)

		t1.cancel()
		l.Unlock()
		require.Equal(t, context.Canceled, t1.result())
		require.NoError(t, t2.result())
		synctest.Wait()
		require.Equal(t, 1, locks, "one lock taken")
		require.Equal(t, 3, calls)
		require.False(t, t3.finished())
		require.Equal(t, 1, l.Waiting())

		t3.cancel()
		require.Equal(t, context.Canceled, t3.result())
		l.Unlock() // t2's
		require.False(t, l.Locked())
	})
}

// TestPortAsyncioLockFinishedWaiterCancelled: B waits; C is started; B is
// cancelled and the lock unlocked before either runs. C must get the lock.
// The second subtest is the other order, the lock handed to B and then B's
// ctx ended before it runs: B either keeps the lock or passes it to C, and
// in both cases the lock ends up held by exactly one of them.
func TestPortAsyncioLockFinishedWaiterCancelled(t *testing.T) {
	testutil.OneProcessor(t)
	for _, grantFirst := range []bool{false, true} {
		name := "CancelThenUnlock"
		if grantFirst {
			name = "UnlockThenCancel"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l ctxsync.Lock
				require.NoError(t, l.Lock(t.Context()))
				tb := pyStart(l.Lock)
				require.Equal(t, 1, l.Waiting())
				tc := pyGo(l.Lock)
				if grantFirst {
					l.Unlock()
					tb.cancel()
				} else {
					tb.cancel()
					l.Unlock()
				}
				synctest.Wait()
				require.True(t, l.Locked())
				errB := tb.result()
				if errB == nil {
					// B kept the lock handed to it before its ctx ended.
					require.True(t, grantFirst, "B had cancelled before the Unlock")
					require.False(t, tc.finished())
					l.Unlock()
				} else {
					require.Equal(t, context.Canceled, errB)
				}
				require.NoError(t, tc.result())
				require.True(t, l.Locked())
				l.Unlock()
				require.False(t, l.Locked())
				require.Zero(t, l.Waiting())
			})
		})
	}
}

func TestPortAsyncioLockReleaseNotAcquired(t *testing.T) {
	var l ctxsync.Lock
	testutil.RequirePanicPrefix(t, "ctxsync: Unlock of unlocked Lock", l.Unlock)
	require.True(t, l.TryLock(), "the Lock is whole after the panic")
	l.Unlock()
}

func TestPortAsyncioLockReleaseNoWaiters(t *testing.T) {
	var l ctxsync.Lock
	require.NoError(t, l.Lock(context.Background()))
	require.True(t, l.Locked())
	l.Unlock()
	require.False(t, l.Locked())
}

func TestPortAsyncioLockContextManager(t *testing.T) {
	var l ctxsync.Lock
	body := func(fail bool) {
		require.NoError(t, l.Lock(context.Background()))
		defer l.Unlock()
		require.True(t, l.Locked())
		if fail {
			panic("the body fails")
		}
	}
	body(false)
	require.False(t, l.Locked())
	require.NotNil(t, testutil.PanicOf(func() { body(true) }))
	require.False(t, l.Locked(), "the deferred Unlock ran")
}

func TestPortAsyncioEventRepr(t *testing.T) {
	var e ctxsync.Event
	require.False(t, e.IsSet())
	e.Set()
	require.True(t, e.IsSet())
}

// TestPortAsyncioEventWait: two tasks wait, a third is started but has not
// run when the Event is set; all three return nil.
func TestPortAsyncioEventWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e ctxsync.Event
		require.False(t, e.IsSet())
		var got pyLog
		waiter := func(n int) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				if err := e.Wait(ctx); err != nil {
					return err
				}
				got.add(n)
				return nil
			}
		}
		t1 := pyStart(waiter(1))
		t2 := pyStart(waiter(2))
		require.Empty(t, got.get())
		t3 := pyGo(waiter(3))
		e.Set()
		synctest.Wait()
		require.Equal(t, []int{1, 2, 3}, got.sorted())
		for _, tk := range []*pyTask{t1, t2, t3} {
			require.True(t, tk.finished())
			require.NoError(t, tk.result())
		}
	})
}

// TestPortAsyncioEventWaitOnSet: Wait on a set Event returns at once; with a
// ctx that is done it fails all the same (package rule).
func TestPortAsyncioEventWaitOnSet(t *testing.T) {
	var e ctxsync.Event
	e.Set()
	require.NoError(t, e.Wait(context.Background()))
	require.Equal(t, context.Canceled, e.Wait(testutil.Cancelled()))
}

func TestPortAsyncioEventWaitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e ctxsync.Event
		tk := pyStart(e.Wait)
		tk.cancel()
		require.Equal(t, context.Canceled, tk.result())
		// The Event is whole: a later waiter is woken by Set.
		t2 := pyStart(e.Wait)
		e.Set()
		require.NoError(t, t2.result())
	})
}

func TestPortAsyncioEventClear(t *testing.T) {
	var e ctxsync.Event
	require.False(t, e.IsSet())
	e.Set()
	require.True(t, e.IsSet())
	e.Clear()
	require.False(t, e.IsSet())
}

// TestPortAsyncioEventClearWithWaiters: a waiter that was blocked when Set
// ran wakes with nil even if Clear follows before it runs; the later Sets
// change nothing for it. The second subtest ends with the Event cleared: the
// wake-up of the first Set is not taken back.
func TestPortAsyncioEventClearWithWaiters(t *testing.T) {
	testutil.OneProcessor(t) // the waiter cannot run between Set and Clear
	for _, setAgain := range []bool{true, false} {
		name := "SetClearSetSet"
		if !setAgain {
			name = "SetClear"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var e ctxsync.Event
				tk := pyStart(e.Wait)
				require.False(t, tk.finished())
				e.Set()
				e.Clear()
				require.False(t, e.IsSet())
				if setAgain {
					e.Set()
					e.Set()
				}
				require.NoError(t, tk.result(), "woken by the first Set")
				require.Equal(t, setAgain, e.IsSet())
			})
		})
	}
}
