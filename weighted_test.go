package ctxsync_test

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// acquireAsync starts Acquire(ctx, n) in a goroutine and returns the channel
// its result arrives on.
func acquireAsync(ctx context.Context, w *ctxsync.Weighted, n int64) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- w.Acquire(ctx, n) }()
	return ch
}

// acquireOf returns Acquire of n units of w, as a func of the ctx alone.
func acquireOf(w *ctxsync.Weighted, n int64) func(context.Context) error {
	return func(ctx context.Context) error { return w.Acquire(ctx, n) }
}

// pending reports whether a result has arrived; call it after synctest.Wait.
func pending(ch <-chan error) bool { return len(ch) == 0 }

func TestWeightedBasics(t *testing.T) {
	w := ctxsync.NewWeighted(10)
	require.Equal(t, int64(10), w.Capacity())
	require.NoError(t, w.Acquire(context.Background(), 4))
	require.True(t, w.TryAcquire(6))
	require.False(t, w.TryAcquire(1))
	require.Equal(t, int64(0), w.Available())
	w.Release(10)
	require.Equal(t, int64(10), w.Available())
	require.NoError(t, w.Acquire(context.Background(), 0), "a zero-weight Acquire with nobody queued")
}

// TestWeightedFIFO admits waiters one Release at a time, and checks that each
// step admits exactly the oldest waiters that fit.
func TestWeightedFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(5)
		require.NoError(t, w.Acquire(t.Context(), 5))
		a := acquireAsync(t.Context(), w, 3)
		synctest.Wait()
		b := acquireAsync(t.Context(), w, 3)
		synctest.Wait()
		c := acquireAsync(t.Context(), w, 2)
		synctest.Wait()
		require.Equal(t, 3, w.Waiting())

		w.Release(3) // A fits
		require.NoError(t, <-a)
		synctest.Wait()
		require.True(t, pending(b))
		require.True(t, pending(c))

		w.Release(2) // 2 free: B does not fit, and C may not pass it
		synctest.Wait()
		require.True(t, pending(b))
		require.True(t, pending(c), "C overtook B")
		require.Equal(t, int64(2), w.Available())

		w.Release(3) // A's units: B, then C
		require.NoError(t, <-b)
		require.NoError(t, <-c)
		require.Equal(t, int64(0), w.Available())
		w.Release(5)
		require.Equal(t, int64(5), w.Available())
		require.Equal(t, 0, w.Waiting())
	})
}

// TestWeightedLargeHeadNotStarved: small requests that would fit wait behind a
// large one at the head of the queue, TryAcquire included.
func TestWeightedLargeHeadNotStarved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(10)
		require.NoError(t, w.Acquire(t.Context(), 8)) // 2 free
		big := acquireAsync(t.Context(), w, 5)
		synctest.Wait()
		small := acquireAsync(t.Context(), w, 1)
		synctest.Wait()
		require.True(t, pending(big))
		require.True(t, pending(small), "a small request overtook the large head")
		require.False(t, w.TryAcquire(1), "TryAcquire overtook the large head")
		require.Equal(t, int64(2), w.Available())

		w.Release(8)
		require.NoError(t, <-big)
		require.NoError(t, <-small)
		require.Equal(t, int64(4), w.Available())
		w.Release(6)
	})
}

// TestWeightedHeadCancelWakesFollowers pins golang/go#37852: when the waiter at
// the head gives up, those behind it that fit must be woken, with no Release to
// prompt it.
func TestWeightedHeadCancelWakesFollowers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(10)
		require.NoError(t, w.Acquire(t.Context(), 8))
		ctx, cancel := context.WithCancel(t.Context())
		big := acquireAsync(ctx, w, 5)
		synctest.Wait()
		small1 := acquireAsync(t.Context(), w, 1)
		synctest.Wait()
		small2 := acquireAsync(t.Context(), w, 1)
		synctest.Wait()
		tooBig := acquireAsync(t.Context(), w, 3)
		synctest.Wait()
		require.Equal(t, 4, w.Waiting())

		cancel()
		require.Equal(t, context.Canceled, <-big)
		require.NoError(t, <-small1)
		require.NoError(t, <-small2)
		synctest.Wait()
		require.True(t, pending(tooBig))
		require.Equal(t, 1, w.Waiting())
		require.Equal(t, int64(0), w.Available())

		w.Release(8)
		require.NoError(t, <-tooBig)
		w.Release(5)
		require.Equal(t, int64(10), w.Available())
		require.Equal(t, 0, w.Waiting())
	})
}

func TestWeightedDoneContext(t *testing.T) {
	for _, tc := range doneCtxCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			w := ctxsync.NewWeighted(5)
			require.Equal(t, tc.want, w.Acquire(tc.ctx, 1))
			require.Equal(t, int64(5), w.Available())
		})
	}
}

func TestWeightedContextEndsWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(3)
		require.NoError(t, w.Acquire(t.Context(), 3))
		ctx, cancel := context.WithCancel(t.Context())
		a := acquireAsync(ctx, w, 2)
		synctest.Wait()
		b := acquireAsync(t.Context(), w, 2)
		synctest.Wait()
		cancel()
		require.Equal(t, context.Canceled, <-a)
		require.Equal(t, 1, w.Waiting())
		w.Release(3)
		require.NoError(t, <-b)
		require.Equal(t, int64(1), w.Available())
		w.Release(2)
		require.Equal(t, int64(3), w.Available())
		require.Equal(t, 0, w.Waiting())
	})
}

func TestWeightedCancelRacesRelease(t *testing.T) {
	runCancelRaces(t, 1000, func(t *testing.T) cancelRace {
		w := ctxsync.NewWeighted(4)
		require.NoError(t, w.Acquire(context.Background(), 4))
		return cancelRace{
			grantRace:     grantRace{first: acquireOf(w, 3), second: acquireOf(w, 1), grant: func() { w.Release(4) }},
			releaseFirst:  func() { w.Release(3) },
			releaseSecond: func() { w.Release(1) },
			check: func(t *testing.T) {
				require.Equal(t, int64(4), w.Available(), "units lost or made up")
				require.Equal(t, 0, w.Waiting())
			},
		}
	})
}

// TestWeightedLastWaiterCancelRacesRelease: the last waiter clears the waiters
// bit as it leaves, while a Release adds its units to the same state word;
// neither may undo the other.
func TestWeightedLastWaiterCancelRacesRelease(t *testing.T) {
	for range testutil.HammerRounds(2000) {
		w := ctxsync.NewWeighted(2)
		require.NoError(t, w.Acquire(context.Background(), 2))
		ctx, cancel := context.WithCancel(context.Background())
		a := acquireAsync(ctx, w, 2)
		for w.Waiting() == 0 {
			runtime.Gosched()
		}
		go cancel()
		w.Release(1) // not enough for the waiter, which can only give up
		require.Equal(t, context.Canceled, <-a)
		w.Release(1)
		require.Equal(t, int64(2), w.Available(), "units lost or made up")
		require.Equal(t, 0, w.Waiting())
		require.True(t, w.TryAcquire(2), "the waiters bit outlived the last waiter")
	}
}

func TestWeightedResizeGrowWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(2)
		require.NoError(t, w.Acquire(t.Context(), 2))
		a := acquireAsync(t.Context(), w, 2)
		synctest.Wait()
		b := acquireAsync(t.Context(), w, 1)
		synctest.Wait()
		w.Resize(5)
		require.NoError(t, <-a)
		require.NoError(t, <-b)
		require.Equal(t, int64(0), w.Available())
		require.Equal(t, int64(5), w.Capacity())
		w.Release(5)
		require.Equal(t, int64(5), w.Available())
	})
}

// TestWeightedResizeShrink: a shrink below what is held takes effect as the
// holders release; waiters that no longer fit are told so.
func TestWeightedResizeShrink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(10)
		require.NoError(t, w.Acquire(t.Context(), 8))
		big := acquireAsync(t.Context(), w, 6)
		synctest.Wait()
		small := acquireAsync(t.Context(), w, 1)
		synctest.Wait()

		w.Resize(4)
		require.Equal(t, ctxsync.ErrExceedsCapacity, <-big, "a waiter larger than the new capacity")
		synctest.Wait()
		require.True(t, pending(small), "admitted while over capacity")
		require.Equal(t, int64(-4), w.Available())
		require.False(t, w.TryAcquire(1))

		w.Release(5) // 3 held: one free
		require.NoError(t, <-small)
		require.Equal(t, int64(0), w.Available())

		// After a Resize, an oversize request is a run-time condition.
		require.Equal(t, ctxsync.ErrExceedsCapacity, w.Acquire(t.Context(), 5))
		require.False(t, w.TryAcquire(5))

		w.Release(4)
		require.Equal(t, int64(4), w.Available())
		w.Resize(10)
		require.Equal(t, int64(10), w.Available())
	})
}

func TestWeightedMisuse(t *testing.T) {
	require.PanicsWithValue(t, "ctxsync: NewWeighted with negative capacity", func() { ctxsync.NewWeighted(-1) })
	require.PanicsWithValue(t, "ctxsync: NewWeighted capacity above MaxWeightedCapacity", func() {
		ctxsync.NewWeighted(ctxsync.MaxWeightedCapacity + 1)
	})
	w := ctxsync.NewWeighted(4)
	bg := context.Background()
	require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of negative weight", func() { _ = w.Acquire(bg, -1) })
	require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of negative weight", func() { w.TryAcquire(-1) })
	require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of more than its capacity", func() { _ = w.Acquire(bg, 5) })
	require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of more than its capacity", func() { w.TryAcquire(5) })
	require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of more than its capacity", func() { _ = w.Acquire(testutil.Cancelled(), 5) },
		"misuse panics even with a done ctx")
	// Weights far past the capacity, which the fast path leaves to the slow
	// one rather than take them out of the count even for a moment.
	for _, n := range []int64{1<<32 + 1, ctxsync.MaxWeightedCapacity + 1, math.MaxInt64} {
		require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of more than its capacity", func() { _ = w.Acquire(bg, n) })
	}
	require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of negative weight", func() { _ = w.Acquire(bg, math.MinInt64) })
	require.PanicsWithValue(t, "ctxsync: Weighted.Release of negative weight", func() { w.Release(-1) })
	require.PanicsWithValue(t, "ctxsync: Weighted.Release of more than held", func() { w.Release(1) })
	require.NoError(t, w.Acquire(bg, 2))
	require.PanicsWithValue(t, "ctxsync: Weighted.Release of more than held", func() { w.Release(3) })
	// Weights past the capacity, up to ones that would overflow the count.
	require.PanicsWithValue(t, "ctxsync: Weighted.Release of more than held", func() { w.Release(5) })
	require.PanicsWithValue(t, "ctxsync: Weighted.Release of more than held", func() { w.Release(ctxsync.MaxWeightedCapacity) })
	require.PanicsWithValue(t, "ctxsync: Weighted.Release of more than held", func() { w.Release(math.MaxInt64) })
	require.PanicsWithValue(t, "ctxsync: Weighted.Release of negative weight", func() { w.Release(math.MinInt64) })
	require.PanicsWithValue(t, "ctxsync: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_ = w.Acquire(nil, 1)
	})
	require.PanicsWithValue(t, "ctxsync: Weighted.Resize with negative capacity", func() { w.Resize(-1) })
	// Every recovered panic left w usable and unchanged.
	require.Equal(t, int64(2), w.Available())
	w.Release(2)
	require.True(t, w.TryAcquire(4))
	w.Release(4)
}

// TestWeightedLargeWeights takes weights on both sides of the largest one that
// the fast path of Acquire handles, up to the largest capacity, and after a
// Resize to 0 leaves what is held owed.
func TestWeightedLargeWeights(t *testing.T) {
	const big = 1 << 32
	w := ctxsync.NewWeighted(ctxsync.MaxWeightedCapacity)
	bg := context.Background()
	require.NoError(t, w.Acquire(bg, ctxsync.MaxWeightedCapacity))
	require.Zero(t, w.Available())
	require.False(t, w.TryAcquire(1))
	w.Release(ctxsync.MaxWeightedCapacity)

	require.NoError(t, w.Acquire(bg, big))
	require.NoError(t, w.Acquire(bg, big+1))
	require.Equal(t, int64(ctxsync.MaxWeightedCapacity-2*big-1), w.Available())

	w.Resize(0)
	require.Equal(t, int64(-2*big-1), w.Available())
	require.ErrorIs(t, w.Acquire(bg, big), ctxsync.ErrExceedsCapacity)
	require.ErrorIs(t, w.Acquire(bg, big+1), ctxsync.ErrExceedsCapacity)
	require.Equal(t, int64(-2*big-1), w.Available(), "the failed Acquires left the count as it was")
	w.Release(big + 1)
	w.Release(big)
	require.Zero(t, w.Available())
	require.NoError(t, w.Acquire(bg, 0))
}

// TestWeightedOverReleaseWithWaiters: the over-release check also holds on the
// slow path, when goroutines are queued.
func TestWeightedOverReleaseWithWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(4)
		require.NoError(t, w.Acquire(t.Context(), 3))
		ctx, cancel := context.WithCancel(t.Context())
		a := acquireAsync(ctx, w, 2)
		synctest.Wait()
		require.PanicsWithValue(t, "ctxsync: Weighted.Release of more than held", func() { w.Release(4) })
		cancel()
		require.Equal(t, context.Canceled, <-a)
		w.Release(3)
		require.Equal(t, int64(4), w.Available())
	})
}

func TestHammerWeighted(t *testing.T) {
	const capacity = 10
	w := ctxsync.NewWeighted(capacity)
	var held atomic.Int64
	var wg sync.WaitGroup
	rounds := testutil.HammerRounds(200)
	stop := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		// Available stays within [0, capacity] on a Weighted never resized,
		// also while failing fast paths have units out for a moment.
		for {
			select {
			case <-stop:
				return
			default:
			}
			if a := w.Available(); a < 0 || a > capacity {
				t.Errorf("Available() = %d of %d", a, capacity)
				return
			}
			runtime.Gosched()
		}
	})
	for g := range 64 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for range rounds {
				n := int64(r.IntN(capacity + 1))
				ctx, cancel := randomCtx(r)
				try := func() bool { return w.TryAcquire(n) }
				if tryOrWait(ctx, r, try, acquireOf(w, n)) == nil {
					if h := held.Add(n); h > capacity {
						t.Errorf("%d units held of %d", h, capacity)
					}
					if r.IntN(4) == 0 {
						runtime.Gosched()
					}
					held.Add(-n)
					w.Release(n)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	close(stop)
	watcher.Wait()
	require.Equal(t, int64(capacity), w.Available(), "units lost or made up")
	require.Equal(t, 0, w.Waiting())
}

// TestHammerWeightedResize mixes Resize into the hammer: afterwards, back at
// the first capacity, every unit is free.
func TestHammerWeightedResize(t *testing.T) {
	const capacity = 10
	w := ctxsync.NewWeighted(capacity)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	rounds := testutil.HammerRounds(100)
	wg.Go(func() {
		r := rand.New(rand.NewPCG(99, 4))
		for {
			select {
			case <-stop:
				return
			default:
			}
			w.Resize(int64(1 + r.IntN(2*capacity)))
			runtime.Gosched()
		}
	})
	var workers sync.WaitGroup
	for g := range 32 {
		workers.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 5))
			for range rounds {
				n := int64(1 + r.IntN(capacity))
				ctx, cancel := randomCtx(r)
				err := w.Acquire(ctx, n)
				if err == nil {
					runtime.Gosched()
					w.Release(n)
				} else if err != ctxsync.ErrExceedsCapacity && ctx.Err() == nil {
					t.Errorf("Acquire = %v with a live ctx", err)
				}
				cancel()
			}
		})
	}
	workers.Wait()
	close(stop)
	wg.Wait()
	w.Resize(capacity)
	require.Equal(t, int64(capacity), w.Available())
	require.Equal(t, 0, w.Waiting())
}
