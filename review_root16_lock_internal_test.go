package ctxsync

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// handedAsCtxEnds parks a goroutine in l.Lock (l held by the test), then hands
// it l, as an Unlock by a goroutine that does not hold l would, ending its ctx
// within the same critical section of l's queue: the waiter's wait returns for
// its ctx, and it finds l handed to it when it leaves. between runs with l's
// queue still locked, after the hand-over and the end of ctx: what other
// goroutines do before the waiter gives l back. It returns what the waiter
// panicked with, if anything, and its error.
func handedAsCtxEnds(t *testing.T, l *Lock, behind int, between func()) (any, error) {
	require.NoError(t, l.Lock(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	var pv any
	done := make(chan struct{})
	go func() {
		defer close(done)
		pv = testutil.PanicOf(func() { err = l.Lock(ctx) })
	}()
	synctest.Wait()
	for range behind {
		go func() {
			if l.Lock(context.Background()) == nil {
				l.Unlock()
			}
		}()
		synctest.Wait()
	}
	require.Equal(t, 1+behind, l.Waiting())

	l.q.Lock()
	l.unlockLocked() // the misused Unlock: l is held (by the test), so it hands l over
	cancel()         // the waiter's select takes its ctx, not the hand-over
	between()
	l.q.Unlock()
	<-done
	return pv, err
}

// TestLockHandedAsCtxEndsAfterMisusedUnlock: a waiter is handed the Lock by an
// Unlock of a goroutine that does not hold it, just as its ctx ends, and the
// holder's own Unlock then frees the Lock that the waiter was handed. Neither
// Unlock can be told to be the misuse when it is made: each finds the Lock
// held.
//
// What was wrong: the waiter, giving back what it was handed, panicked
// "ctxsync: Unlock of unlocked Lock", though it misused nothing. What is
// right: the hand-over it was given was let go already; it returns ctx.Err()
// and gives back nothing.
func TestLockHandedAsCtxEndsAfterMisusedUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(Lock)
		pv, err := handedAsCtxEnds(t, l, 0, func() {
			l.Unlock() // the holder's: l is held, by the waiter now
		})
		require.Nil(t, pv, "the waiter panicked")
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, l.Locked())
		require.Zero(t, l.Waiting())
		require.True(t, l.TryLock(), "nothing left queued")
		l.Unlock()
	})
}

// TestLockHandedAsCtxEndsRetakenBeforeGiveBack: as above, and another
// goroutine takes the freed Lock before the waiter gives back what it was
// handed. What was wrong: the give-back freed that goroutine's hold, so that
// its own Unlock panicked, and a third could take the Lock while it held it.
// What is right: the waiter gives back nothing, and the Lock stays held.
func TestLockHandedAsCtxEndsRetakenBeforeGiveBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(Lock)
		pv, err := handedAsCtxEnds(t, l, 0, func() {
			l.Unlock()
			require.True(t, l.TryLock(), "another goroutine takes the freed Lock")
		})
		require.Nil(t, pv, "the waiter panicked")
		require.ErrorIs(t, err, context.Canceled)
		require.True(t, l.Locked(), "the other goroutine's hold was let go")
		require.False(t, l.TryLock())
		l.Unlock()
		require.False(t, l.Locked())
	})
}

// TestLockHandedAsCtxEndsHandedOnBeforeGiveBack: as above, with a goroutine
// queued behind the waiter: the holder's Unlock hands the waiter's hold on to
// it. What was wrong: the waiter's give-back handed that goroutine's hold on
// again (to nobody: the Lock was freed under it). What is right: the waiter
// gives back nothing, and the goroutine behind it holds the Lock until it
// unlocks.
func TestLockHandedAsCtxEndsHandedOnBeforeGiveBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(Lock)
		pv, err := handedAsCtxEnds(t, l, 1, func() {
			// The holder's Unlock: with a goroutine queued it takes the
			// slow path, which locks l's queue, locked here already. It
			// hands the waiter's hold on to the goroutine behind it.
			l.unlockLocked()
		})
		require.Nil(t, pv, "the waiter panicked")
		require.ErrorIs(t, err, context.Canceled)
		synctest.Wait() // the goroutine behind takes it and unlocks
		require.False(t, l.Locked())
		require.Zero(t, l.Waiting())
		require.True(t, l.TryLock())
		l.Unlock()
	})
}

// TestLockKeepAfterMisusedUnlock: lockSlow takes a free Lock by itself and
// then finds its ctx ended. Between its take and that look, an Unlock by a
// goroutine that does not hold it freed the Lock, and another goroutine took
// it. What was wrong: the give-back of the take freed that other goroutine's
// hold. What is right: it gives back nothing, and the Lock stays held.
func TestLockKeepAfterMisusedUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := new(Lock)
		require.True(t, l.TryLock())
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		c := &hookCtx{Context: ctx, err: func() {
			switch calls++; calls {
			case 1: // Lock's look: the holder lets go after Lock loaded the state
				l.Unlock()
			case 2: // keep's look, after lockSlow's TryLock took it
				l.Unlock()                   // the misused Unlock
				require.True(t, l.TryLock()) // another goroutine's take
				cancel()
			}
		}}
		var err error
		pv := testutil.PanicOf(func() { err = l.Lock(c) })
		require.Nil(t, pv)
		require.Equal(t, 2, calls)
		require.ErrorIs(t, err, context.Canceled)
		require.True(t, l.Locked(), "the other goroutine's hold was let go")
		l.Unlock()
		require.False(t, l.Locked())
	})
}

// hookCtx runs err before each look at its Err.
type hookCtx struct {
	context.Context
	err func()
}

func (c *hookCtx) Err() error { c.err(); return c.Context.Err() }
