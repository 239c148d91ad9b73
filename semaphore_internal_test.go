package ctxsync

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestSemaphoreHandOff drives handOff, the second half of a Release that found
// the waiters bit set, in the states it can find once it has the lock.
func TestSemaphoreHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSemaphore(0)
		got := make(chan error, 1)
		go func() { got <- s.Acquire(t.Context()) }()
		synctest.Wait()
		require.Equal(t, int64(semWaiters), s.state.Load(), "a waiter sets the bit")

		// A handOff whose permit was freed while the waiters were gone, and
		// taken, before this waiter set the bit again: the count is 0, and
		// the waiter must not get a permit that nobody gave.
		s.handOff()
		synctest.Wait()
		require.Empty(t, got)
		require.Equal(t, 1, s.Waiting())

		// A Release's Add landed: the permit in the count goes to the waiter,
		// and with the last waiter served the bit is cleared.
		s.state.Add(1)
		s.handOff()
		require.NoError(t, <-got)
		require.Equal(t, int64(0), s.state.Load())
		require.Equal(t, 0, s.Waiting())
	})
}

// TestSemaphoreReleaseOverflow: a Release past the largest count panics and
// leaves the count as it was, rather than wrapping into the waiters bit.
func TestSemaphoreReleaseOverflow(t *testing.T) {
	s := NewSemaphore(math.MaxInt64)
	require.PanicsWithValue(t, "ctxsync: Semaphore.Release overflows the count", s.Release)
	require.Equal(t, math.MaxInt, s.Available())
	require.NoError(t, s.Acquire(context.Background()))
	s.Release()
	require.Equal(t, math.MaxInt, s.Available())
}
