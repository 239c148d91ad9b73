package ctxsync_test

// The tests of this file are Go's tests of sync.Mutex (src/sync/
// mutex_test.go), re-expressed against Lock, one Go test per peer test,
// named after it. Lock(ctx) is Mutex.Lock with a ctx that never ends unless
// the case says otherwise; the peer's real sleeps are virtual ones in a
// testing/synctest bubble.
//
// Where our contract differs by design (doc.go and Lock's doc):
//
//   - MutexMisuse: an Unlock of an unlocked Mutex is a fatal error that ends
//     the program, which the peer checks in a child process; ours is a
//     panic, recoverable, with a message of ours ("ctxsync: Unlock of
//     unlocked Lock"), that leaves the Lock whole. The port checks the
//     prefix in-process, and that the Lock works afterwards. The RWMutex
//     entries of the peer's table are in port_gosync_rwmutex_test.go.
//   - MutexFairness: sync.Mutex only promises that a waiter gets the lock
//     within about a millisecond (starvation mode); ours is first in, first
//     out, so the port checks the stronger promise: the hog takes the lock
//     at most once more after the waiter is queued, each time.
//   - Mutex: the peer turns on the mutex profile, which ctxsync does not
//     feed; the hammer checks mutual exclusion as well.
//
// Skipped, with no counterpart:
//
//   - the Benchmark* functions: speed is compared in bench/, beside the
//     peer, not here.
//
// TestSemaphore hammers the runtime's semaphore, which sync.Mutex is built
// on; its nearest counterpart here is a Semaphore of one permit.

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestPortGoSemaphore(t *testing.T) {
	s := ctxsync.NewSemaphore(1)
	var inside atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for range 200 {
				if err := s.Acquire(context.Background()); err != nil {
					t.Errorf("Acquire = %v, want nil", err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d goroutines hold the one permit", n)
				}
				inside.Add(-1)
				s.Release()
			}
		})
	}
	wg.Wait()
	require.True(t, s.TryAcquire())
	require.False(t, s.TryAcquire())
	s.Release()
}

// gosyncHammerLock locks and unlocks l loops times, one time in three with
// TryLock, checking that nobody else is inside meanwhile.
func gosyncHammerLock(t *testing.T, l *ctxsync.Lock, inside *atomic.Int32, loops int) {
	for i := range loops {
		if i%3 == 0 {
			if !l.TryLock() {
				continue
			}
		} else if err := l.Lock(context.Background()); err != nil {
			t.Errorf("Lock = %v, want nil", err)
			return
		}
		if n := inside.Add(1); n != 1 {
			t.Errorf("%d goroutines hold the Lock", n)
		}
		inside.Add(-1)
		l.Unlock()
	}
}

func TestPortGoLockMutex(t *testing.T) {
	l := new(ctxsync.Lock)
	require.NoError(t, l.Lock(context.Background()))
	require.False(t, l.TryLock(), "TryLock of a locked Lock")
	l.Unlock()
	require.True(t, l.TryLock(), "TryLock of an unlocked Lock")
	l.Unlock()

	var inside atomic.Int32
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { gosyncHammerLock(t, l, &inside, 300) })
	}
	wg.Wait()
	require.False(t, l.Locked())
	require.Zero(t, l.Waiting())
}

func TestPortGoLockMisuse(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(l *ctxsync.Lock)
	}{
		{"Mutex.Unlock", func(l *ctxsync.Lock) { l.Unlock() }},
		{"Mutex.Unlock2", func(l *ctxsync.Lock) {
			if err := l.Lock(context.Background()); err != nil {
				panic(err)
			}
			l.Unlock()
			l.Unlock()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l ctxsync.Lock
			testutil.RequirePanicPrefix(t, "ctxsync: Unlock of unlocked Lock", func() { tc.f(&l) })
			// The panic left the Lock whole: unlocked, and it locks.
			require.False(t, l.Locked())
			require.True(t, l.TryLock())
			l.Unlock()
		})
	}
}

// TestPortGoLockFairness: a goroutine holds the Lock almost all the time,
// letting go only to take it again at once; another takes it ten times. Ours
// is first in, first out: once the other is queued, the hog's next Lock
// queues behind it, so the hog begins at most one hold (the one it may begin
// at the instant the other wakes) while the other waits.
func TestPortGoLockFairness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		var waiting atomic.Bool
		var overtakes, worst atomic.Int32
		stop := make(chan struct{})
		hogDone := make(chan struct{})
		go func() {
			defer close(hogDone)
			for {
				if err := l.Lock(context.Background()); err != nil {
					t.Errorf("hog's Lock = %v", err)
					return
				}
				if waiting.Load() {
					overtakes.Add(1)
				}
				time.Sleep(100 * time.Microsecond)
				l.Unlock()
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		for range 10 {
			time.Sleep(100 * time.Microsecond)
			overtakes.Store(0)
			waiting.Store(true)
			require.NoError(t, l.Lock(t.Context()))
			waiting.Store(false)
			if n := overtakes.Load(); n > worst.Load() {
				worst.Store(n)
			}
			l.Unlock()
		}
		close(stop)
		<-hogDone
		require.LessOrEqual(t, worst.Load(), int32(1), "holds the hog began while the other waited")
	})
}
