package ctxsync_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// Resize jumps between 0, 1 and MaxWeightedCapacity while waiters ask for 0,
// 1, half the maximum and the maximum, with random cancellation: units are
// handed over as ctxs end and as Resize refuses waiters. The units held never
// pass the largest capacity (nothing wraps), Available never passes the
// capacity, and at the end every unit is back and nobody waits.
func TestHammerWeightedExtremeResize(t *testing.T) {
	const max = ctxsync.MaxWeightedCapacity
	sizes := []int64{0, 1, 2, max - 1, max}
	weights := []int64{0, 1, 2, max / 2, max - 1, max}
	for round := range testutil.HammerRounds(20) {
		w := ctxsync.NewWeighted(max)
		w.Resize(max) // resized: requests above the capacity are refused, not a panic
		var held atomic.Int64
		var stop atomic.Bool
		resized := make(chan struct{})
		go func() {
			defer close(resized)
			r := rand.New(rand.NewPCG(99, uint64(round)))
			for !stop.Load() {
				c := sizes[r.IntN(len(sizes))]
				w.Resize(c)
				if a := w.Available(); a > c {
					panic("Available above the capacity")
				}
				runtime.Gosched()
			}
			w.Resize(max)
		}()
		cxRun(6, func(id int, r *rand.Rand) {
			for range 200 {
				n := weights[r.IntN(len(weights))]
				var err error
				if r.IntN(5) == 0 {
					if !w.TryAcquire(n) {
						err = errors.New("busy")
					}
				} else {
					ctx, cancel := cxCtx(r)
					err = w.Acquire(ctx, n)
					cancel()
				}
				if err == nil {
					if h := held.Add(n); h < 0 || h > max {
						panic("units held beyond the largest capacity")
					}
					runtime.Gosched()
					held.Add(-n)
					w.Release(n)
				} else if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
					!errors.Is(err, ctxsync.ErrExceedsCapacity) && err.Error() != "busy" {
					panic(err)
				}
			}
		})
		stop.Store(true)
		<-resized
		require.Equal(t, int64(max), w.Available(), "round %d: units lost", round)
		require.Equal(t, 0, w.Waiting(), "round %d", round)
		require.True(t, w.TryAcquire(max), "round %d", round)
		w.Release(max)
	}
}
