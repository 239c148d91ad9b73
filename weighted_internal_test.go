package ctxsync

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// takeForAMoment does what the fast path of an Acquire of n does before it
// finds that it cannot keep the units: it takes them out of the state.
func takeForAMoment(w *Weighted, n int64) { w.state.Add(-n << weightedShift) }

// fullWithWaiter returns a Weighted of capacity units, all held, with one
// goroutine queued for n of them, and the channel its Acquire's result
// arrives on. Call it inside a synctest bubble.
func fullWithWaiter(t *testing.T, capacity, n int64) (*Weighted, <-chan error) {
	t.Helper()
	w := NewWeighted(capacity)
	require.True(t, w.TryAcquire(capacity))
	done := make(chan error, 1)
	go func() { done <- w.Acquire(t.Context(), n) }()
	synctest.Wait()
	require.Equal(t, 1, w.Waiting())
	return w, done
}

// TestWeightedGiveBackWakes: a Release that comes while a failing fast path
// has units out finds too few free to wake the head of the queue; the
// giveBack that puts them back wakes it.
func TestWeightedGiveBackWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, done := fullWithWaiter(t, 3, 2)

		takeForAMoment(w, 2)
		w.Release(3) // sees 1 unit free: not enough for the waiter
		synctest.Wait()
		require.Len(t, done, 0, "the waiter cannot be woken with the units out")
		require.Equal(t, int64(1), w.Available())

		w.giveBack(2)
		synctest.Wait()
		require.Len(t, done, 1, "the giveBack woke the waiter")
		require.NoError(t, <-done)
		require.Equal(t, int64(1), w.Available())
		require.Zero(t, w.state.Load()&weightedWaiters, "the queue is empty, its bit clear")
		w.Release(2)
		require.Equal(t, int64(3), w.Available())
	})
}

// TestWeightedGiveBackAfterResize: the same, when it is a Resize that grows
// the capacity while the units are out.
func TestWeightedGiveBackAfterResize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, done := fullWithWaiter(t, 2, 2)

		takeForAMoment(w, 1)
		w.Resize(4) // 2 free, 1 of them out for the moment
		synctest.Wait()
		require.Len(t, done, 0)

		w.giveBack(1)
		synctest.Wait()
		require.NoError(t, <-done)
		require.Zero(t, w.Available())
		w.Release(4)
	})
}

// TestWeightedGiveBackNobodyQueued: with nobody queued, giveBack only puts
// the units back.
func TestWeightedGiveBackNobodyQueued(t *testing.T) {
	w := NewWeighted(3)
	takeForAMoment(w, 2)
	require.Equal(t, int64(1), w.Available())
	require.False(t, w.TryAcquire(2), "the units out count as taken")
	w.giveBack(2)
	require.Equal(t, int64(3), w.Available())
	require.True(t, w.TryAcquire(3))
}

// TestWeightedAvailableWhileOut: on a Weighted never resized, Available
// never reports a negative count, even while a failing fast path has more
// units out than are free; after a shrink it reports what is owed.
func TestWeightedAvailableWhileOut(t *testing.T) {
	w := NewWeighted(3)
	require.True(t, w.TryAcquire(2))
	takeForAMoment(w, 3)
	require.Zero(t, w.Available())
	w.giveBack(3)
	require.Equal(t, int64(1), w.Available())

	w.Resize(0)
	require.Equal(t, int64(-2), w.Available(), "2 held beyond the capacity")
	require.ErrorIs(t, w.Acquire(context.Background(), 1), ErrExceedsCapacity)
	require.Equal(t, int64(-2), w.Available(), "the failed fast path gave its units back")
	w.Release(2)
	require.Zero(t, w.Available())
}
