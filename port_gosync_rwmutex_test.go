package ctxsync_test

// The tests of this file are Go's tests of sync.RWMutex (src/sync/
// rwmutex_test.go, and the RWMutex entries of mutex_test.go's misuse
// table), re-expressed against RWLock, one Go test per peer test, named
// after it. The peer's channel hand-shakes that show a goroutine blocked
// are synctest.Wait in a testing/synctest bubble.
//
// Where our contract differs by design (doc.go and RWLock's doc):
//
//   - ParallelReaders, RWMutex: the peer varies GOMAXPROCS; a test of ours
//     must not change it under the rest of the suite, and the machine is
//     shared, so the port keeps the reader counts and fewer rounds.
//   - RLocker: RWLock has no RLocker (a sync.Locker cannot take a ctx); the
//     port makes the same calls with RLock and RUnlock, the two read locks
//     taken by one goroutine and released by another, which RWLock allows.
//   - Misuse: the peer's fatal errors are panics of ours, recoverable, with
//     our messages ("ctxsync: ... not locked for ..."), that leave the
//     RWLock whole; the port checks that it still works afterwards.
//   - RecursiveReadLock (not a peer test: the rule of sync.RWMutex's doc
//     that a blocked Lock keeps new readers out, so a read lock taken
//     twice by one goroutine may deadlock): ours is the same rule, first in,
//     first out, documented; the second RLock waits behind the writer, and
//     with a ctx it gives up instead of deadlocking.
//
// Skipped, with no counterpart: the Benchmark* functions (see bench/).

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestPortGoRWLockParallelReaders(t *testing.T) {
	for _, n := range []int{1, 3, 4} {
		t.Run(fmt.Sprint("readers=", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rw ctxsync.RWLock
				var in atomic.Int32
				unlock := make(chan struct{})
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						if err := rw.RLock(t.Context()); err != nil {
							t.Errorf("RLock = %v, want nil", err)
							return
						}
						in.Add(1)
						<-unlock
						rw.RUnlock()
					})
				}
				synctest.Wait()
				require.Equal(t, int32(n), in.Load(), "readers holding the lock together")
				require.Zero(t, rw.Waiting())
				close(unlock)
				wg.Wait()
				require.True(t, rw.TryLock())
				rw.Unlock()
			})
		})
	}
}

// gosyncReader read-locks rw rounds times; activity counts the readers inside,
// and each writer inside as 10000.
func gosyncReader(t *testing.T, rw *ctxsync.RWLock, rounds int, activity *atomic.Int32) {
	for range rounds {
		if err := rw.RLock(context.Background()); err != nil {
			t.Errorf("RLock = %v", err)
			return
		}
		if n := activity.Add(1); n < 1 || n >= 10000 {
			t.Errorf("a reader entered with activity %d", n)
		}
		activity.Add(-1)
		rw.RUnlock()
	}
}

func gosyncWriter(t *testing.T, rw *ctxsync.RWLock, rounds int, activity *atomic.Int32) {
	for range rounds {
		if err := rw.Lock(context.Background()); err != nil {
			t.Errorf("Lock = %v", err)
			return
		}
		if n := activity.Add(10000); n != 10000 {
			t.Errorf("a writer entered with activity %d", n)
		}
		activity.Add(-10000)
		rw.Unlock()
	}
}

func TestPortGoRWLockRWMutex(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 5
	}
	for _, readers := range []int{1, 3, 10, 5} {
		t.Run(fmt.Sprint("readers=", readers), func(t *testing.T) {
			var rw ctxsync.RWLock
			var activity atomic.Int32
			var wg sync.WaitGroup
			wg.Go(func() { gosyncWriter(t, &rw, rounds, &activity) })
			for range readers / 2 {
				wg.Go(func() { gosyncReader(t, &rw, rounds, &activity) })
			}
			wg.Go(func() { gosyncWriter(t, &rw, rounds, &activity) })
			for range readers - readers/2 {
				wg.Go(func() { gosyncReader(t, &rw, rounds, &activity) })
			}
			wg.Wait()
			require.Zero(t, activity.Load())
			require.Zero(t, rw.Waiting())
			require.True(t, rw.TryLock())
			rw.Unlock()
		})
	}
}

func TestPortGoRWLockRLocker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw ctxsync.RWLock
		var rlocked, wlocked atomic.Int32
		const n = 10
		go func() {
			for range n {
				for range 2 { // the read lock, taken twice
					if err := rw.RLock(t.Context()); err != nil {
						t.Errorf("RLock = %v", err)
						return
					}
				}
				rlocked.Add(1)
				if rw.Lock(t.Context()) != nil {
					t.Error("Lock failed")
					return
				}
				wlocked.Add(1)
			}
		}()
		for i := range int32(n) {
			synctest.Wait()
			require.Equal(t, i+1, rlocked.Load(), "read-locked twice")
			rw.RUnlock()
			synctest.Wait()
			require.Equal(t, i, wlocked.Load(), "the writer got in past a reader")
			rw.RUnlock()
			synctest.Wait()
			require.Equal(t, i+1, wlocked.Load(), "the writer is in once the readers left")
			require.Equal(t, i+1, rlocked.Load(), "a reader got in past the writer")
			rw.Unlock()
		}
		synctest.Wait()
	})
}

func TestPortGoRWLockMisuse(t *testing.T) {
	lock := func(rw *ctxsync.RWLock) {
		if err := rw.Lock(context.Background()); err != nil {
			panic(err)
		}
	}
	rlock := func(rw *ctxsync.RWLock) {
		if err := rw.RLock(context.Background()); err != nil {
			panic(err)
		}
	}
	const (
		notW = "ctxsync: Unlock of RWLock not locked for writing"
		notR = "ctxsync: RUnlock of RWLock not locked for reading"
	)
	for _, tc := range []struct {
		name    string
		f       func(rw *ctxsync.RWLock)
		msg     string
		readers int // still holding it after the panic
		writer  bool
	}{
		{"RWMutex.Unlock", func(rw *ctxsync.RWLock) { rw.Unlock() }, notW, 0, false},
		{"RWMutex.Unlock2", func(rw *ctxsync.RWLock) { rlock(rw); rw.Unlock() }, notW, 1, false},
		{"RWMutex.Unlock3", func(rw *ctxsync.RWLock) { lock(rw); rw.Unlock(); rw.Unlock() }, notW, 0, false},
		{"RWMutex.RUnlock", func(rw *ctxsync.RWLock) { rw.RUnlock() }, notR, 0, false},
		{"RWMutex.RUnlock2", func(rw *ctxsync.RWLock) { lock(rw); rw.RUnlock() }, notR, 0, true},
		{"RWMutex.RUnlock3", func(rw *ctxsync.RWLock) { rlock(rw); rw.RUnlock(); rw.RUnlock() }, notR, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rw ctxsync.RWLock
			testutil.RequirePanicPrefix(t, tc.msg, func() { tc.f(&rw) })
			// The panic changed nothing: whoever held the lock still holds
			// it, and once they leave it works as before.
			switch {
			case tc.writer:
				require.False(t, rw.TryRLock(), "TryRLock with the writer still in")
				rw.Unlock()
			case tc.readers > 0:
				require.False(t, rw.TryLock(), "TryLock with a reader still in")
				for range tc.readers {
					rw.RUnlock()
				}
			}
			require.True(t, rw.TryLock())
			rw.Unlock()
			require.True(t, rw.TryRLock())
			rw.RUnlock()
		})
	}
}

// TestPortGoRWLockRecursiveReadLock: a goroutine holds a read lock and asks
// for a second while a writer waits. The second waits behind the writer
// (readers that come after a waiting writer wait too), which waits for the
// first: with sync.RWMutex a deadlock, here a wait that the ctx ends. Then
// the writer gets in once the first read lock goes.
func TestPortGoRWLockRecursiveReadLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw ctxsync.RWLock
		require.NoError(t, rw.RLock(t.Context()))
		writer := tkSpawn(func(ctx context.Context) error { return rw.Lock(ctx) })
		writer.pending(t, "Lock with a reader in")

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		require.Equal(t, context.DeadlineExceeded, rw.RLock(ctx), "second RLock behind a waiting writer")
		require.False(t, rw.TryRLock(), "TryRLock behind a waiting writer")
		writer.pending(t, "Lock with the first reader still in")

		rw.RUnlock()
		_, err := writer.ready(t, "Lock once the reader left")
		require.NoError(t, err)
		rw.Unlock()
		require.Zero(t, rw.Waiting())
	})
}
