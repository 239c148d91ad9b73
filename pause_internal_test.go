package ctxsync

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/waitq"
)

// The slow paths pause and look again before they lock the queue, and what
// they wait for may be freed after that look and before the lock. Each test
// below holds the queue's lock, lets a goroutine fail its look and block on
// that lock, frees what it waits for by the fast path, which needs no lock, and
// then unlocks: the goroutine must take it then, without queueing. Queueing
// would leave it waiting with nothing held and no release to come, and it
// would wait forever.

// waitLockingIn waits until a goroutine is blocked on a sync.Mutex with fn on
// its stack.
func waitLockingIn(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for range 1_000_000 {
		n := runtime.Stack(buf, true)
		for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "[sync.Mutex.Lock") && strings.Contains(g, fn) {
				return
			}
		}
		runtime.Gosched()
	}
	t.Fatalf("no goroutine blocked on a sync.Mutex in %s", fn)
}

// freedBeforeQueueing runs take in a goroutine while q is locked, frees what
// take waits for once it blocks on q's lock in fn, and returns take's error.
func freedBeforeQueueing(t *testing.T, q *waitq.Mutex, fn string, take func() error, free func()) error {
	t.Helper()
	q.Lock()
	got := make(chan error, 1)
	go func() { got <- take() }()
	waitLockingIn(t, fn)
	free()
	q.Unlock()
	select {
	case err := <-got:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s queued for what was freed before it locked the queue", fn)
		return nil
	}
}

func TestLockFreedBeforeQueueing(t *testing.T) {
	var l Lock
	require.True(t, l.TryLock())
	err := freedBeforeQueueing(t, &l.q.Mutex, "(*Lock).lockSlow",
		func() error { return l.Lock(context.Background()) }, l.Unlock)
	require.NoError(t, err)
	require.Equal(t, int64(lockHeld), l.state.Load()&(lockHeld|lockWaiters), "held, with no waiters bit")
	require.Zero(t, l.q.Len())
	l.Unlock()
	require.False(t, l.Locked())
}

func TestSemaphoreFreedBeforeQueueing(t *testing.T) {
	s := NewSemaphore(1)
	require.True(t, s.TryAcquire())
	err := freedBeforeQueueing(t, &s.q.Mutex, "(*Semaphore).acquireSlow",
		func() error { return s.Acquire(context.Background()) }, s.Release)
	require.NoError(t, err)
	require.Zero(t, s.state.Load(), "taken, with nobody counted as waiting")
	require.Zero(t, s.owed)
	require.Zero(t, s.Waiting())
	s.Release()
	require.Equal(t, 1, s.Available())
}

func TestWeightedFreedBeforeQueueing(t *testing.T) {
	w := NewWeighted(3)
	require.True(t, w.TryAcquire(3))
	err := freedBeforeQueueing(t, &w.q.Mutex, "(*Weighted).acquireSlow",
		func() error { return w.Acquire(context.Background(), 2) }, func() { w.Release(3) })
	require.NoError(t, err)
	require.Equal(t, int64(1), w.Available())
	require.Zero(t, w.state.Load()&weightedWaiters, "no waiters bit")
	require.Zero(t, w.Waiting())
	w.Release(2)
	require.Equal(t, int64(3), w.Available())
}

func TestRWLockFreedBeforeQueueing(t *testing.T) {
	var rw RWLock
	require.True(t, rw.TryLock())
	err := freedBeforeQueueing(t, &rw.q.Mutex, "(*RWLock).Lock",
		func() error { return rw.Lock(context.Background()) }, rw.Unlock)
	require.NoError(t, err)
	require.Equal(t, int64(rwWriter), rw.state.Load()&^rwReleases, "held, with no waiters bit")
	require.Zero(t, rw.q.Len())
	rw.Unlock()
	require.Zero(t, rw.state.Load()&^rwReleases)
}
