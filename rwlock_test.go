package ctxsync_test

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

// lockAsync calls rw.Lock (writer) or rw.RLock (reader) in a goroutine.
func lockAsync(ctx context.Context, rw *ctxsync.RWLock, writer bool) <-chan error {
	ch := make(chan error, 1)
	go func() {
		if writer {
			ch <- rw.Lock(ctx)
		} else {
			ch <- rw.RLock(ctx)
		}
	}()
	return ch
}

func TestRWLockZeroValue(t *testing.T) {
	var rw ctxsync.RWLock
	bg := context.Background()
	require.NoError(t, rw.RLock(bg))
	require.True(t, rw.TryRLock(), "two readers")
	require.False(t, rw.TryLock(), "a writer among readers")
	rw.RUnlock()
	rw.RUnlock()
	require.NoError(t, rw.Lock(bg))
	require.False(t, rw.TryRLock(), "a reader with a writer")
	require.False(t, rw.TryLock(), "two writers")
	rw.Unlock()
	require.True(t, ctxsync.NewRWLock().TryLock())
}

// TestRWLockWriterPreferred: once a writer waits, new readers wait behind it,
// TryRLock included.
func TestRWLockWriterPreferred(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw ctxsync.RWLock
		require.NoError(t, rw.RLock(t.Context()))
		w := lockAsync(t.Context(), &rw, true)
		synctest.Wait()
		r := lockAsync(t.Context(), &rw, false)
		synctest.Wait()
		require.True(t, pending(w))
		require.True(t, pending(r), "a reader overtook a waiting writer")
		require.False(t, rw.TryRLock(), "TryRLock overtook a waiting writer")

		rw.RUnlock() // the last reader leaves: the writer enters
		require.NoError(t, <-w)
		synctest.Wait()
		require.True(t, pending(r))
		rw.Unlock()
		require.NoError(t, <-r)
		rw.RUnlock()
		require.True(t, rw.TryLock())
		rw.Unlock()
	})
}

// TestRWLockReadersEnterTogether: when a writer unlocks, the readers queued
// before the next writer all enter; those behind that writer wait for it.
func TestRWLockReadersEnterTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw ctxsync.RWLock
		require.NoError(t, rw.Lock(t.Context()))
		r1 := lockAsync(t.Context(), &rw, false)
		synctest.Wait()
		r2 := lockAsync(t.Context(), &rw, false)
		synctest.Wait()
		w2 := lockAsync(t.Context(), &rw, true)
		synctest.Wait()
		r3 := lockAsync(t.Context(), &rw, false)
		synctest.Wait()

		rw.Unlock()
		require.NoError(t, <-r1)
		require.NoError(t, <-r2)
		synctest.Wait()
		require.True(t, pending(w2))
		require.True(t, pending(r3), "a reader behind a writer entered with the batch before it")

		rw.RUnlock()
		rw.RUnlock()
		require.NoError(t, <-w2)
		synctest.Wait()
		require.True(t, pending(r3))
		rw.Unlock()
		require.NoError(t, <-r3)
		rw.RUnlock()
	})
}

// TestRWLockWriterGivesUp: a waiting writer that gives up lets the readers
// queued behind it in, while the first reader still holds the lock.
func TestRWLockWriterGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw ctxsync.RWLock
		require.NoError(t, rw.RLock(t.Context()))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		w := lockAsync(ctx, &rw, true)
		synctest.Wait()
		r := lockAsync(t.Context(), &rw, false)
		synctest.Wait()
		require.True(t, pending(r))

		time.Sleep(time.Second)
		require.Equal(t, context.DeadlineExceeded, <-w)
		require.NoError(t, <-r, "the readers behind the writer stayed blocked")
		rw.RUnlock()
		rw.RUnlock()
		require.True(t, rw.TryLock())
		rw.Unlock()
	})
}

func TestRWLockDoneContext(t *testing.T) {
	for _, tc := range doneCtxCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var rw ctxsync.RWLock
			require.Equal(t, tc.want, rw.RLock(tc.ctx))
			require.Equal(t, tc.want, rw.Lock(tc.ctx))
			require.True(t, rw.TryLock(), "a failed call changed the state")
			rw.Unlock()
		})
	}
}

func TestRWLockContextEndsWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw ctxsync.RWLock
		require.NoError(t, rw.Lock(t.Context()))
		ctx, cancel := context.WithCancel(t.Context())
		r := lockAsync(ctx, &rw, false)
		synctest.Wait()
		w := lockAsync(ctx, &rw, true)
		synctest.Wait()
		after := lockAsync(t.Context(), &rw, true)
		synctest.Wait()
		cancel()
		require.Equal(t, context.Canceled, <-r)
		require.Equal(t, context.Canceled, <-w)
		rw.Unlock()
		require.NoError(t, <-after)
		rw.Unlock()
		require.True(t, rw.TryRLock())
		rw.RUnlock()
	})
}

// TestRWLockCancelRacesUnlock: a hand-over that meets a cancellation is never
// lost, for readers and writers.
func TestRWLockCancelRacesUnlock(t *testing.T) {
	for _, writer := range []bool{false, true} {
		runCancelRaces(t, 500, func(t *testing.T) cancelRace {
			var rw ctxsync.RWLock
			require.NoError(t, rw.Lock(context.Background()))
			first, releaseFirst := rw.RLock, rw.RUnlock
			if writer {
				first, releaseFirst = rw.Lock, rw.Unlock
			}
			return cancelRace{
				grantRace:    grantRace{first: first, second: rw.Lock, grant: rw.Unlock},
				releaseFirst: releaseFirst, releaseSecond: rw.Unlock,
				check: func(t *testing.T) {
					require.True(t, rw.TryLock(), "the lock was lost")
					rw.Unlock()
				},
			}
		})
	}
}

// TestRWLockReadersCannotStarveWriter: with readers taking the lock in a tight
// loop, a writer still gets it, promptly.
func TestRWLockReadersCannotStarveWriter(t *testing.T) {
	var rw ctxsync.RWLock
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if rw.RLock(context.Background()) == nil {
					runtime.Gosched()
					rw.RUnlock()
				}
			}
		})
	}
	for range testutil.HammerRounds(20) {
		// The deadline bounds a failure; success takes microseconds.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(t, rw.Lock(ctx), "a writer starved by readers")
		rw.Unlock()
		cancel()
	}
	close(stop)
	wg.Wait()
}

func TestRWLockMisuse(t *testing.T) {
	var rw ctxsync.RWLock
	require.PanicsWithValue(t, "ctxsync: RUnlock of RWLock not locked for reading", rw.RUnlock)
	require.PanicsWithValue(t, "ctxsync: Unlock of RWLock not locked for writing", rw.Unlock)
	require.NoError(t, rw.RLock(context.Background()))
	require.PanicsWithValue(t, "ctxsync: Unlock of RWLock not locked for writing", rw.Unlock, "Unlock of a read lock")
	rw.RUnlock()
	require.NoError(t, rw.Lock(context.Background()))
	require.PanicsWithValue(t, "ctxsync: RUnlock of RWLock not locked for reading", rw.RUnlock, "RUnlock of a write lock")
	rw.Unlock()
	require.PanicsWithValue(t, "ctxsync: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_ = rw.RLock(nil)
	})
	require.PanicsWithValue(t, "ctxsync: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_ = rw.Lock(nil)
	})
	require.True(t, rw.TryLock(), "a recovered misuse left the lock unusable")
	rw.Unlock()
}

// TestRWLockMisuseWithWaiters: the slow paths check for misuse too.
func TestRWLockMisuseWithWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw ctxsync.RWLock
		require.NoError(t, rw.RLock(t.Context()))
		ctx, cancel := context.WithCancel(t.Context())
		w := lockAsync(ctx, &rw, true)
		synctest.Wait()
		require.PanicsWithValue(t, "ctxsync: Unlock of RWLock not locked for writing", rw.Unlock)
		cancel()
		require.Equal(t, context.Canceled, <-w)
		rw.RUnlock()
	})
}

// TestHammerRWLock: no reader is inside while a writer is, never two writers;
// everything is released at the end.
func TestHammerRWLock(t *testing.T) {
	var (
		rw               ctxsync.RWLock
		readers, writers atomic.Int32
		shared           int // written by writers only: the race detector checks the lock
		wg               sync.WaitGroup
	)
	rounds := testutil.HammerRounds(200)
	for g := range 48 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 11))
			for range rounds {
				ctx, cancel := randomCtx(r)
				if r.IntN(4) == 0 {
					if tryOrWait(ctx, r, rw.TryLock, rw.Lock) == nil {
						if w := writers.Add(1); w != 1 || readers.Load() != 0 {
							t.Errorf("a writer with %d writers and %d readers inside", w, readers.Load())
						}
						shared++
						runtime.Gosched()
						writers.Add(-1)
						rw.Unlock()
					}
				} else {
					if tryOrWait(ctx, r, rw.TryRLock, rw.RLock) == nil {
						readers.Add(1)
						if writers.Load() != 0 {
							t.Error("a reader with a writer inside")
						}
						_ = shared
						if r.IntN(4) == 0 {
							runtime.Gosched()
						}
						readers.Add(-1)
						rw.RUnlock()
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
	require.True(t, rw.TryLock(), "locked after everyone left")
	rw.Unlock()
}
