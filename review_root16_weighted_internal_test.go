package ctxsync

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

const overRelease = "ctxsync: Weighted.Release of more than held"

// TestWeightedOverReleaseNearMaxDoesNotWrap: at MaxWeightedCapacity, with all
// of it free, a Release of more than is held whose units another Release of
// more than held has added already, and not yet taken back (it is between its
// Add and its check), must panic as the other does.
//
// What was wrong: Release added n units before it checked, and the two Adds
// carried the count of free units through the sign bit of the state, which
// then showed nothing over: the Release returned as if it were right, and the
// state was wrapped. What is right: it panics, and leaves the state as it
// found it.
func TestWeightedOverReleaseNearMaxDoesNotWrap(t *testing.T) {
	for _, n := range []int64{MaxWeightedCapacity, MaxWeightedCapacity - 1, 1 << 59, maxFastWeight + 1} {
		w := NewWeighted(MaxWeightedCapacity)
		const other = MaxWeightedCapacity // the other Release's units, in the state for the moment
		w.state.Add(other << weightedShift)
		require.Equal(t, overRelease, testutil.PanicOf(func() { w.Release(n) }), "n=%d", n)
		w.state.Add(-other << weightedShift) // the other Release's check takes its units back
		require.Equal(t, int64(MaxWeightedCapacity), w.Available(), "n=%d", n)
		require.Zero(t, w.state.Load()&(weightedWaiters|weightedResizing), "n=%d", n)
		require.NoError(t, w.Acquire(context.Background(), MaxWeightedCapacity))
		w.Release(MaxWeightedCapacity)
		require.Equal(t, overRelease, testutil.PanicOf(func() { w.Release(1) }), "n=%d", n)
		require.Equal(t, int64(MaxWeightedCapacity), w.Available(), "n=%d", n)
	}
}

// TestWeightedOverReleaseRacingResizeAlwaysPanics: nothing is held, and one
// goroutine resizes the Weighted between 10 and 5 over and over while another
// releases 3 units: each Release is of more than is held, and must panic,
// whatever capacity it meets.
//
// What was wrong: Release read the capacity, then added its units and
// compared them with the capacity it read. A Resize to 5 made in between
// left 8 units free, within the 10 it had read: it returned, and the
// Weighted then had more units free than its capacity. What is right: every
// such Release panics.
func TestWeightedOverReleaseRacingResizeAlwaysPanics(t *testing.T) {
	w := NewWeighted(10)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			w.Resize(5)
			w.Resize(10)
		}
	})
	defer wg.Wait()
	defer stop.Store(true)
	for i := range 200000 {
		if p := testutil.PanicOf(func() { w.Release(3) }); p != overRelease {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("Release %d of 3 units, none held: panicked with %v; %d free of %d", i, p, w.Available(), w.Capacity())
		}
		if i%64 == 0 {
			runtime.Gosched()
		}
	}
}
