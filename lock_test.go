package ctxsync_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestLockZeroValue(t *testing.T) {
	var l ctxsync.Lock
	require.False(t, l.Locked())
	require.True(t, l.TryLock())
	require.True(t, l.Locked())
	require.False(t, l.TryLock(), "TryLock of a held Lock")
	l.Unlock()
	require.False(t, l.Locked())
	require.NoError(t, l.Lock(context.Background()))
	l.Unlock()
}

func TestLockFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := ctxsync.NewLock()
		require.NoError(t, l.Lock(t.Context()))

		var order []string
		var wg sync.WaitGroup
		for _, name := range []string{"A", "B", "C"} {
			wg.Go(func() {
				assert.NoError(t, l.Lock(t.Context()))
				order = append(order, name) // guarded by l
				l.Unlock()
			})
			synctest.Wait() // name is queued before the next one starts
		}
		require.False(t, l.TryLock(), "TryLock overtook queued waiters")
		l.Unlock()
		wg.Wait()
		require.Equal(t, []string{"A", "B", "C"}, order)
		require.False(t, l.Locked())
	})
}

func TestLockTryLockDoesNotOvertake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		require.NoError(t, l.Lock(t.Context()))
		got := make(chan struct{})
		go func() {
			assert.NoError(t, l.Lock(t.Context()))
			close(got)
		}()
		synctest.Wait()
		l.Unlock() // hands the lock to the waiter
		require.False(t, l.TryLock(), "TryLock took a lock handed to a waiter")
		<-got
		require.True(t, l.Locked())
		l.Unlock()
	})
}

func TestLockDoneContext(t *testing.T) {
	for _, tc := range doneCtxCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var l ctxsync.Lock
			err := l.Lock(tc.ctx)
			require.Equal(t, tc.want, err, "Lock with a done ctx on a free Lock")
			require.False(t, l.Locked(), "a failed Lock changed the state")
		})
	}
}

func TestLockContextEndsWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		require.NoError(t, l.Lock(t.Context()))

		ctx, cancel := context.WithCancel(t.Context())
		errA := make(chan error)
		go func() { errA <- l.Lock(ctx) }()
		synctest.Wait()

		gotB := make(chan struct{})
		go func() {
			assert.NoError(t, l.Lock(t.Context()))
			close(gotB)
		}()
		synctest.Wait()

		cancel()
		require.Equal(t, context.Canceled, <-errA)
		l.Unlock() // must go to B: A left the queue
		<-gotB
		l.Unlock()
		require.False(t, l.Locked())
	})
}

func TestLockDeadlineWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		require.NoError(t, l.Lock(t.Context()))
		ctx, cancel := context.WithTimeout(t.Context(), 10)
		defer cancel()
		require.Equal(t, context.DeadlineExceeded, l.Lock(ctx))
		l.Unlock()
		require.False(t, l.Locked())
	})
}

// TestLockCancelRacesUnlock: whichever wins between a waiter's ctx ending and
// Unlock handing it the lock, the lock is never lost and the waiter behind
// gets it.
func TestLockCancelRacesUnlock(t *testing.T) {
	runCancelRaces(t, 2000, func(t *testing.T) cancelRace {
		var l ctxsync.Lock
		require.NoError(t, l.Lock(context.Background()))
		return cancelRace{
			grantRace:    grantRace{first: l.Lock, second: l.Lock, grant: l.Unlock},
			releaseFirst: l.Unlock, releaseSecond: l.Unlock,
			check: func(t *testing.T) {
				require.True(t, l.TryLock(), "the lock was lost")
				l.Unlock()
			},
		}
	})
}

func TestLockUnlockFromOtherGoroutine(t *testing.T) {
	var l ctxsync.Lock
	require.NoError(t, l.Lock(context.Background()))
	done := make(chan struct{})
	go func() {
		l.Unlock()
		close(done)
	}()
	<-done
	require.False(t, l.Locked())
}

func TestLockMisuse(t *testing.T) {
	var l ctxsync.Lock
	require.PanicsWithValue(t, "ctxsync: Unlock of unlocked Lock", l.Unlock)
	require.True(t, l.TryLock(), "a recovered misuse left the Lock unusable")
	l.Unlock()
	require.PanicsWithValue(t, "ctxsync: Unlock of unlocked Lock", l.Unlock, "double Unlock")
	require.PanicsWithValue(t, "ctxsync: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_ = l.Lock(nil)
	})
}

func TestHammerLock(t *testing.T) {
	var (
		l       ctxsync.Lock
		inside  atomic.Int32
		counter int // guarded by l: the race detector checks the hand-offs
		wins    atomic.Int64
		wg      sync.WaitGroup
	)
	rounds := testutil.HammerRounds(200)
	for g := range 64 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range rounds {
				ctx, cancel := randomCtx(r)
				if err := tryOrWait(ctx, r, l.TryLock, l.Lock); err == nil {
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d goroutines inside the Lock", n)
					}
					counter++
					wins.Add(1)
					if r.IntN(4) == 0 {
						runtime.Gosched()
					}
					inside.Add(-1)
					l.Unlock()
				} else if err != context.Canceled && err != context.DeadlineExceeded {
					t.Errorf("Lock = %v, want nil or a ctx error", err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	require.False(t, l.Locked(), "locked after every holder unlocked")
	require.True(t, l.TryLock())
	require.Equal(t, wins.Load(), int64(counter))
	l.Unlock()
}
