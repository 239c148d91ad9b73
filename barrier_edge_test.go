package ctxsync_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

func TestBarrierExtremeParties(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(math.MaxInt, nil)
		require.Equal(t, math.MaxInt, b.Parties())
		chans := []<-chan arrival{arriveAsync(t.Context(), b), arriveAsync(t.Context(), b)}
		synctest.Wait()
		require.Equal(t, 2, b.Waiting())
		b.Abort()
		for _, ch := range chans {
			require.Equal(t, ctxsync.ErrBrokenBarrier, (<-ch).err)
		}
	})
	for _, n := range []int{0, -1, math.MinInt} {
		require.PanicsWithValue(t, "ctxsync: NewBarrier with fewer than 1 party", func() { ctxsync.NewBarrier(n, nil) })
	}
}

// TestBarrierZeroValue: Wait on the zero Barrier panics, saying what to use;
// the other methods answer and change nothing that matters.
func TestBarrierZeroValue(t *testing.T) {
	var b ctxsync.Barrier
	require.PanicsWithValue(t, "ctxsync: Barrier.Wait on a zero Barrier; use NewBarrier", func() { _, _ = b.Wait(context.Background()) })
	require.Equal(t, 0, b.Parties())
	require.Equal(t, 0, b.Waiting())
	require.False(t, b.Broken())
	b.Abort()
	require.True(t, b.Broken())
	b.Reset()
	require.False(t, b.Broken())
}

// TestBarrierAcrossBubbles: a Barrier made outside a synctest bubble serves
// rounds inside one, and one made inside keeps serving after it ends.
func TestBarrierAcrossBubbles(t *testing.T) {
	round := func(t *testing.T, b *ctxsync.Barrier) {
		done := make(chan arrival, b.Parties())
		for range b.Parties() {
			go func() {
				i, err := b.Wait(context.Background())
				done <- arrival{i, err}
			}()
		}
		var got []int
		for range b.Parties() {
			a := <-done
			require.NoError(t, a.err)
			got = append(got, a.index)
		}
		require.ElementsMatch(t, []int{0, 1, 2}, got)
	}
	outside := ctxsync.NewBarrier(3, func() error { return nil })
	round(t, outside)
	var inside *ctxsync.Barrier
	synctest.Test(t, func(t *testing.T) {
		round(t, outside)
		inside = ctxsync.NewBarrier(3, func() error { return nil })
		round(t, inside)
		// Left broken with waiters released: nothing of the bubble is kept.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := inside.Wait(ctx)
		require.Equal(t, context.DeadlineExceeded, err)
	})
	require.True(t, inside.Broken())
	inside.Reset()
	round(t, inside)
	round(t, outside)
}

// TestBarrierReleaseRacesCancel: parties whose ctx ends as the round ends,
// by its last arrival or by Reset, get the round's outcome or their ctx's
// error, never anything else, and the barrier is whole afterwards.
func TestBarrierReleaseRacesCancel(t *testing.T) {
	for i := range 300 {
		b := ctxsync.NewBarrier(3, nil)
		ctx, cancel := context.WithCancel(context.Background())
		a := arriveAsync(ctx, b)
		c := arriveAsync(context.Background(), b)
		for b.Waiting() < 2 {
			runtime.Gosched()
		}
		go cancel()
		var last error
		if i%2 == 0 {
			_, last = b.Wait(context.Background())
		} else {
			b.Reset()
		}
		ra, rc := <-a, <-c
		switch {
		case i%2 == 1:
			require.True(t, ra.err == ctxsync.ErrBrokenBarrier || ra.err == context.Canceled, "%v", ra.err)
			require.Equal(t, ctxsync.ErrBrokenBarrier, rc.err)
		case ra.err == nil:
			require.NoError(t, last)
			require.NoError(t, rc.err)
		default:
			// A left: before the round was complete, which broke it, or
			// after, which left it whole.
			require.True(t, errors.Is(ra.err, context.Canceled), "%v", ra.err)
			if last == nil {
				require.NoError(t, rc.err)
			} else {
				require.Equal(t, ctxsync.ErrBrokenBarrier, last)
				require.Equal(t, ctxsync.ErrBrokenBarrier, rc.err)
			}
		}
		cancel()
		b.Reset()
		require.Equal(t, 0, b.Waiting())
		require.False(t, b.Broken())
	}
}

// TestBarrierResetRacesCancel: a party's ctx ends, and before it runs again a
// Reset releases it. It reports one or the other, and the barrier is whole.
func TestBarrierResetRacesCancel(t *testing.T) {
	b := ctxsync.NewBarrier(3, nil)
	errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
		wait := func(ctx context.Context) error { _, err := b.Wait(ctx); return err }
		return grantRace{first: wait, second: wait, grant: b.Reset}
	})
	require.Contains(t, []error{ctxsync.ErrBrokenBarrier, context.Canceled}, errA)
	require.Equal(t, ctxsync.ErrBrokenBarrier, errB)
	require.False(t, b.Broken())
	require.Equal(t, 0, b.Waiting())
}
