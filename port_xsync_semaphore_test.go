package ctxsync_test

// The tests of this file are golang.org/x/sync's tests of semaphore.Weighted
// (semaphore/semaphore_test.go), re-expressed against Weighted, one Go test
// per peer test, named after it. The peer's goroutines that sleep for real
// run in a testing/synctest bubble here, where sleeps are virtual; its
// "spin until the big Acquire is queued" loops become synctest.Wait; its
// timeouts are context.WithTimeout in the bubble.
//
// Where our contract differs by design (doc.go and Weighted's doc):
//
//   - WeightedDoesntBlockIfTooBig: x/sync queues a request larger than the
//     capacity until its ctx ends; ours is a bug on a Weighted never
//     resized, and Acquire panics ("ctxsync: ..."). After a Resize it is a
//     run-time condition and Acquire returns ErrExceedsCapacity at once, or
//     when a shrink leaves a queued request too large. The port checks both,
//     and that the small requests get through meanwhile, as the peer's do.
//   - WeightedPanic: the over-release panics with a message of ours, and
//     the port also checks that the Weighted is whole after the panic.
//   - Weighted: the peer hammers with GOMAXPROCS goroutines and 10000
//     rounds over all; ours runs in a bubble, with fewer rounds (the machine
//     is shared), and checks every unit is back at the end.

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// xsyncHammer takes n units and gives them back, loops times, holding them
// for a random virtual time below a millisecond.
func xsyncHammer(t *testing.T, w *ctxsync.Weighted, n int64, loops int) {
	for range loops {
		if err := w.Acquire(context.Background(), n); err != nil {
			t.Errorf("Acquire(ctx, %d) = %v, want nil", n, err)
			return
		}
		time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond))))
		w.Release(n)
	}
}

func TestPortXSyncWeighted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 8 // goroutine i asks for i units, 0 included
		w := ctxsync.NewWeighted(n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { xsyncHammer(t, w, int64(i), 100) })
		}
		wg.Wait()
		require.Equal(t, int64(n), w.Available())
		require.Zero(t, w.Waiting())
	})
}

func TestPortXSyncWeightedPanic(t *testing.T) {
	w := ctxsync.NewWeighted(1)
	testutil.RequirePanicPrefix(t, "ctxsync: ", func() { w.Release(1) })
	// The refused Release changed nothing.
	require.Equal(t, int64(1), w.Available())
	require.True(t, w.TryAcquire(1))
	require.False(t, w.TryAcquire(1))
	w.Release(1)
}

func TestPortXSyncWeightedTryAcquire(t *testing.T) {
	ctx := context.Background()
	w := ctxsync.NewWeighted(2)
	var tries []bool
	require.NoError(t, w.Acquire(ctx, 1))
	tries = append(tries, w.TryAcquire(1))
	tries = append(tries, w.TryAcquire(1))
	w.Release(2)
	tries = append(tries, w.TryAcquire(1))
	require.NoError(t, w.Acquire(ctx, 1))
	tries = append(tries, w.TryAcquire(1))
	require.Equal(t, []bool{true, false, true, false}, tries)
}

func TestPortXSyncWeightedAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := ctxsync.NewWeighted(2)
		acquireWithin := func(n int64) bool {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			defer cancel()
			err := w.Acquire(ctx, n)
			if err != nil {
				require.Equal(t, context.DeadlineExceeded, err)
			}
			return err == nil
		}
		var tries []bool
		require.NoError(t, w.Acquire(ctx, 1))
		tries = append(tries, acquireWithin(1))
		tries = append(tries, acquireWithin(1))
		w.Release(2)
		tries = append(tries, acquireWithin(1))
		require.NoError(t, w.Acquire(ctx, 1))
		tries = append(tries, acquireWithin(1))
		require.Equal(t, []bool{true, false, true, false}, tries)
		require.Zero(t, w.Waiting(), "the timed-out Acquire left the queue")
	})
}

func TestPortXSyncWeightedDoesntBlockIfTooBig(t *testing.T) {
	const n = 2
	// Never resized: a request above the capacity is a bug.
	w := ctxsync.NewWeighted(n)
	testutil.RequirePanicPrefix(t, "ctxsync: ", func() { _ = w.Acquire(context.Background(), n+1) })
	require.Equal(t, int64(n), w.Available())

	synctest.Test(t, func(t *testing.T) {
		// Resized: the capacity is a run-time condition. A request that a
		// shrink leaves too large while it waits is refused, and never
		// holds up the small ones behind it.
		w := ctxsync.NewWeighted(n + 1)
		w.Resize(n + 1)
		require.NoError(t, w.Acquire(t.Context(), 1))
		big := tkSpawn(tkAcquireN(w, n+1))
		big.pending(t, "Acquire(n+1)")
		w.Resize(n)
		_, err := big.ready(t, "Acquire(n+1) after the shrink")
		require.Equal(t, ctxsync.ErrExceedsCapacity, err)
		w.Release(1)

		// And one made too large before it asks is refused at once.
		require.Equal(t, ctxsync.ErrExceedsCapacity, w.Acquire(t.Context(), n+1))

		var wg sync.WaitGroup
		for range n * 3 {
			wg.Go(func() {
				if err := w.Acquire(t.Context(), 1); err != nil {
					t.Errorf("Acquire(ctx, 1) = %v, want nil", err)
					return
				}
				time.Sleep(time.Millisecond)
				w.Release(1)
			})
		}
		wg.Wait()
		require.Equal(t, int64(n), w.Available())
	})
}

// TestPortXSyncLargeAcquireDoesntStarve: n goroutines each hold one unit,
// give it back and take it again without pause; a request for all n must
// still get through, since the small ones queue behind it.
func TestPortXSyncLargeAcquireDoesntStarve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		const n = 4
		w := ctxsync.NewWeighted(n)
		var running atomic.Bool
		running.Store(true)
		var wg sync.WaitGroup
		for range n {
			require.NoError(t, w.Acquire(ctx, 1))
			wg.Go(func() {
				defer w.Release(1)
				for running.Load() {
					time.Sleep(time.Millisecond)
					w.Release(1)
					if err := w.Acquire(ctx, 1); err != nil {
						t.Errorf("Acquire(ctx, 1) = %v, want nil", err)
						return
					}
				}
			})
		}
		require.NoError(t, w.Acquire(ctx, n))
		running.Store(false)
		w.Release(n)
		wg.Wait()
		require.Equal(t, int64(n), w.Available())
	})
}

// TestPortXSyncAllocCancelDoesntStarve: a small request queued behind a large
// one that gives up must not stay queued: it fits, and nobody is ahead.
func TestPortXSyncAllocCancelDoesntStarve(t *testing.T) {
	t.Run("bubble", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := ctxsync.NewWeighted(10)
			require.NoError(t, w.Acquire(t.Context(), 1))
			big := tkSpawn(tkAcquireN(w, 10))
			big.pending(t, "Acquire(10)")
			small := tkSpawn(tkAcquireN(w, 1))
			small.pending(t, "Acquire(1) behind Acquire(10)")
			_, err := big.drop(t, "Acquire(10)")
			require.Equal(t, context.Canceled, err)
			_, err = small.ready(t, "Acquire(1) once Acquire(10) gave up")
			require.NoError(t, err)
			w.Release(2)
			require.Equal(t, int64(10), w.Available())
		})
	})
	// As the peer runs it: the cancel races with the small Acquire.
	t.Run("race", func(t *testing.T) {
		for range 50 {
			w := ctxsync.NewWeighted(10)
			require.NoError(t, w.Acquire(context.Background(), 1))
			ctx, cancel := context.WithCancel(context.Background())
			bigDone := make(chan error, 1)
			go func() { bigDone <- w.Acquire(ctx, 10) }()
			for w.Waiting() == 0 {
				runtime.Gosched() // until the big one is queued
			}
			go cancel()
			require.NoError(t, w.Acquire(context.Background(), 1))
			w.Release(1)
			require.Equal(t, context.Canceled, <-bigDone)
			w.Release(1)
			require.Equal(t, int64(10), w.Available())
			cancel()
		}
	})
}

// TestPortXSyncWeightedAcquireCanceled (go.dev/issue/63615): a ctx that ends
// before the units are freed fails the Acquire, and the units are all there
// afterwards; a done ctx fails even when the units are free.
func TestPortXSyncWeightedAcquireCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(2)
		ctx, cancel := context.WithCancel(context.Background())
		require.NoError(t, w.Acquire(context.Background(), 1))
		released := make(chan struct{})
		go func() {
			synctest.Wait() // the Acquire(2) below is queued
			cancel()
			w.Release(1)
			close(released)
		}()
		require.Equal(t, context.Canceled, w.Acquire(ctx, 2))
		<-released
		require.True(t, w.TryAcquire(2), "TryAcquire(2) after the cancelled Acquire")
		w.Release(2)
		require.Equal(t, context.Canceled, w.Acquire(ctx, 1))
		require.Equal(t, int64(2), w.Available())
	})
}
