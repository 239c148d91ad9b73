package ctxsync

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestSemaphoreOwed: a Release that promises its permit to a goroutine that
// counted itself waiting but has not queued yet leaves the permit owed, and
// that goroutine takes it instead of queueing.
func TestSemaphoreOwed(t *testing.T) {
	s := NewSemaphore(0)
	require.Negative(t, s.state.Add(-1), "the fast path of an Acquire counts itself waiting")
	s.Release() // promises its permit: nobody is queued to take it
	require.Equal(t, int64(1), s.owed)
	require.Zero(t, s.Available())

	require.NoError(t, s.acquireSlow(context.Background()))
	require.Zero(t, s.owed)
	require.Zero(t, s.state.Load())
	require.Zero(t, s.Waiting())
}

// TestSemaphoreLeaveBeforeDelivery: a waiter whose ctx ends after a Release
// promised it a permit, but before that Release delivered it, puts a permit
// back, and the late delivery is dropped: the permit is counted once.
func TestSemaphoreLeaveBeforeDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSemaphore(0)
		ctx, cancel := context.WithCancel(t.Context())
		got := make(chan error, 1)
		go func() { got <- s.Acquire(ctx) }()
		synctest.Wait()
		require.Equal(t, 1, s.Waiting())
		require.Equal(t, int64(-1), s.state.Load())

		c := s.state.Add(1) // a Release's Add lands; its handOff is yet to come
		cancel()
		require.ErrorIs(t, <-got, context.Canceled)
		require.Equal(t, int64(-1), s.owed, "the promised permit is to be dropped")
		require.Equal(t, 1, s.Available(), "the waiter put a permit back")

		s.handOff(c)
		require.Zero(t, s.owed)
		require.Equal(t, 1, s.Available())
		require.Zero(t, s.Waiting())
	})
}

// TestSemaphoreLeaveBeforeDeliveryWithOthersQueued: the permit on its way to a
// waiter that left is dropped even when others are queued, rather than handed
// to the next in line: that one has a permit of its own on the way, or none
// promised at all, and the leaver has put a permit back already. Handing it on
// would admit more holders than there are permits.
func TestSemaphoreLeaveBeforeDeliveryWithOthersQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSemaphore(0)
		acquire := func(ctx context.Context) chan error {
			got := make(chan error, 1)
			go func() { got <- s.Acquire(ctx) }()
			synctest.Wait()
			return got
		}
		ctxX, cancelX := context.WithCancel(t.Context())
		x := acquire(ctxX)
		y := acquire(t.Context())
		require.Equal(t, 2, s.Waiting())

		// Two Releases' Adds land, promising permits to x and y; their
		// handOffs are yet to come.
		c1, c2 := s.state.Add(1), s.state.Add(1)
		cancelX()
		require.ErrorIs(t, <-x, context.Canceled)
		require.True(t, s.TryAcquire(), "x put a permit back") // one holder
		w := acquire(t.Context())
		require.Equal(t, 2, s.Waiting(), "y and w")

		s.handOff(c1) // x's: dropped
		s.handOff(c2) // y's
		synctest.Wait()
		require.NoError(t, <-y)
		require.Empty(t, w, "two Releases, two holders: w must wait")
		require.Equal(t, 1, s.Waiting())

		s.Release()
		require.NoError(t, <-w)
		s.Release()
		s.Release()
		require.Equal(t, 2, s.Available())
		require.Zero(t, s.owed)
	})
}

// TestSemaphoreReleaseOverflow: a Release past the largest count panics and
// leaves the count as it was, rather than wrapping to a count of waiters.
func TestSemaphoreReleaseOverflow(t *testing.T) {
	s := NewSemaphore(math.MaxInt64)
	require.PanicsWithValue(t, "ctxsync: Semaphore.Release overflows the count", s.Release)
	require.Equal(t, math.MaxInt, s.Available())
	require.NoError(t, s.Acquire(context.Background()))
	s.Release()
	require.Equal(t, math.MaxInt, s.Available())
}
