package ctxsync

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestWeightedOverReleaseWhileAcquireFindsTooFew pins the second window of
// Release's doc where a Release of more than held goes unseen: an Acquire
// whose fast path finds too few units free has taken its units out of the
// state, for the moment before it gives them back (see Weighted.state). A
// Release that adds its units in that moment finds the free units short by
// those, within the capacity, and returns. The misuse shows later, if at all:
// here an Acquire takes the unit it gave back, so that one unit more than the
// capacity is held, and the holders' Releases then panic, one unit over.
func TestWeightedOverReleaseWhileAcquireFindsTooFew(t *testing.T) {
	w := NewWeighted(4)
	require.True(t, w.TryAcquire(4))
	// An Acquire(1), in its fast path, finds nothing free: its Add took a
	// unit out, and it is about to give it back (giveBack).
	require.Negative(t, w.state.Add(-1<<weightedShift))
	// Nobody holds a fifth unit: this Release is of more than held.
	require.Nil(t, testutil.PanicOf(func() { w.Release(1) }), "the window closed: update Release's doc")
	w.giveBack(1)
	require.Equal(t, int64(1), w.Available(), "one unit free with all four held")
	require.True(t, w.TryAcquire(1), "a fifth unit is held")
	w.Release(1)
	require.Equal(t, "ctxsync: Weighted.Release of more than held", testutil.PanicOf(func() { w.Release(4) }))
	w.Release(3) // the units that are held, as the Weighted counts them
	require.Equal(t, int64(4), w.Available())
}

// TestHammerWeightedNeverOverCapacity: goroutines acquire and release random
// weights with random cancellation, TryAcquire among them, while the capacity
// moves between 4 and 8 now and then: what the callers hold together never
// exceeds the largest capacity; at rest every unit is back and nobody is
// queued, and an over-release, made while nobody holds anything, panics and
// changes nothing.
func TestHammerWeightedNeverOverCapacity(t *testing.T) {
	for round := range testutil.HammerRounds(20) {
		w := NewWeighted(8)
		var held atomic.Int64
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			r := rand.New(rand.NewPCG(7, uint64(round)))
			for !stop.Load() {
				w.Resize(int64(4 + r.IntN(5)))
				time.Sleep(time.Duration(r.IntN(50)) * time.Microsecond)
			}
		})
		var workers sync.WaitGroup
		for i := range 6 {
			workers.Go(func() {
				r := rand.New(rand.NewPCG(uint64(i), uint64(round)))
				for range 300 {
					n := int64(r.IntN(5))
					var err error
					if r.IntN(5) == 0 {
						if !w.TryAcquire(n) {
							continue
						}
					} else {
						ctx, cancel := rv16dCtx(r)
						err = w.Acquire(ctx, n)
						cancel()
					}
					if err != nil {
						if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrExceedsCapacity) {
							t.Errorf("Acquire(%d): %v", n, err)
						}
						continue
					}
					if h := held.Add(n); h > 8 {
						t.Errorf("%d units held, capacity at most 8", h)
					}
					if r.IntN(2) == 0 {
						time.Sleep(time.Duration(r.IntN(3)) * time.Microsecond)
					}
					held.Add(-n)
					w.Release(n)
				}
			})
		}
		workers.Wait()
		stop.Store(true)
		wg.Wait()
		c := w.Capacity()
		require.Equal(t, c, w.Available(), "round %d: units lost or made up", round)
		require.Zero(t, w.Waiting())
		require.Equal(t, "ctxsync: Weighted.Release of more than held", testutil.PanicOf(func() { w.Release(1) }))
		require.Equal(t, c, w.Available())
		require.True(t, w.TryAcquire(c))
		require.False(t, w.TryAcquire(1))
		w.Release(c)
	}
}

// TestWeightedReleaseAtFastPathBound: a Release of n units just under, at and
// just over maxFastWeight, which it adds before it checks or checks before it
// adds, at the largest capacity: of n held it frees them; of n with n-1
// held, or with none held, it panics and changes nothing; a Release of 0
// changes nothing.
func TestWeightedReleaseAtFastPathBound(t *testing.T) {
	bg := context.Background()
	for _, n := range []int64{maxFastWeight - 1, maxFastWeight, maxFastWeight + 1} {
		w := NewWeighted(MaxWeightedCapacity)
		require.Equal(t, overRelease, testutil.PanicOf(func() { w.Release(n) }), "n=%d", n)
		require.Equal(t, int64(MaxWeightedCapacity), w.Available())
		require.NoError(t, w.Acquire(bg, n))
		w.Release(n)
		require.Equal(t, int64(MaxWeightedCapacity), w.Available())
		require.NoError(t, w.Acquire(bg, n-1))
		require.Equal(t, overRelease, testutil.PanicOf(func() { w.Release(n) }), "n=%d", n)
		require.Equal(t, MaxWeightedCapacity-(n-1), w.Available())
		w.Release(0)
		require.Equal(t, MaxWeightedCapacity-(n-1), w.Available())
		w.Release(n - 1)
		require.Equal(t, int64(MaxWeightedCapacity), w.Available())
		require.Zero(t, w.state.Load()&(weightedWaiters|weightedResizing))
	}
}
