package ctxsync_test

// The tests of this file are tokio's tests of sync::Mutex (tokio/tests/
// sync_mutex.rs), re-expressed against Lock, one Go test per tokio test,
// named after it. lock() is Lock, a guard dropped is Unlock; a future
// polled and pending, then dropped, is a call in a goroutine of the bubble
// whose ctx is then ended (see tkTask in port_tokio_semaphore_test.go).
// tokio's timeout() is context.WithTimeout, in a bubble.
//
// Where our contract differs by design:
//
//   - A Lock guards no value: the tests that read or change the value
//     through a guard change a variable under the lock instead.
//   - aborted_future_1: a tokio guard unlocks when the future that holds it
//     is dropped; a holder here unlocks itself, typically with a deferred
//     Unlock, which runs when its ctx ends and it returns.
//
// Skipped, with no counterpart:
//
//   - debug_format, mutex_debug: a Lock has no value to format, and no
//     String method.
//   - lock (commented out in tokio's file).

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

func TestPortTokioLockStraightExecution(t *testing.T) {
	var l ctxsync.Lock
	v := 100
	for _, next := range []int{99, 98} {
		require.NoError(t, l.Lock(context.Background()))
		v = next
		l.Unlock()
	}
	require.NoError(t, l.Lock(context.Background()))
	require.Equal(t, 98, v)
	l.Unlock()
}

func TestPortTokioLockReadiness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		require.NoError(t, l.Lock(t.Context()))
		t2 := tkSpawn(func(ctx context.Context) error { return l.Lock(ctx) })
		t2.pending(t, "Lock")
		l.Unlock()
		_, err := t2.ready(t, "Lock")
		require.NoError(t, err)
		require.True(t, l.Locked())
		l.Unlock()
	})
}

// aborted_future_1: a holder whose ctx ends while it holds the lock, and
// that unlocks as it returns, leaves the lock free.
func TestPortTokioLockAbortedFuture1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		err := func() error {
			if err := l.Lock(ctx); err != nil {
				return err
			}
			defer l.Unlock()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for range 2 {
				select {
				case <-tick.C:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}()
		require.Equal(t, context.DeadlineExceeded, err)

		ctx2, cancel2 := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel2()
		require.NoError(t, l.Lock(ctx2), "the lock is still held")
		l.Unlock()
	})
}

// aborted_future_2: a Lock that times out while it waits leaves nothing
// held once the holder unlocks.
func TestPortTokioLockAbortedFuture2(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		require.NoError(t, l.Lock(t.Context()))
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel()
		require.Equal(t, context.DeadlineExceeded, l.Lock(ctx))
		require.Equal(t, 0, l.Waiting())
		l.Unlock()
		require.False(t, l.Locked(), "the timed-out waiter was handed the lock")

		ctx2, cancel2 := context.WithTimeout(t.Context(), time.Millisecond)
		defer cancel2()
		require.NoError(t, l.Lock(ctx2))
		l.Unlock()
	})
}

// The waiter of aborted_future_2 dropped from between two others: the lock
// passes over it, in order, and nothing is left held.
func TestPortTokioLockAbortedFuture2FIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxsync.Lock
		var got []int
		require.NoError(t, l.Lock(t.Context()))
		var ws []*tkTask[struct{}]
		for i := range 3 {
			ws = append(ws, tkSpawn(func(ctx context.Context) error {
				if err := l.Lock(ctx); err != nil {
					return err
				}
				got = append(got, i) // under the lock
				l.Unlock()
				return nil
			}))
		}
		_, err := ws[1].drop(t, "the second waiter")
		require.Equal(t, context.Canceled, err)
		require.False(t, l.TryLock(), "TryLock overtook the queue")
		l.Unlock()
		for _, i := range []int{0, 2} {
			_, err := ws[i].ready(t, "a waiter")
			require.NoError(t, err)
		}
		require.Equal(t, []int{0, 2}, got)
		require.False(t, l.Locked())
		require.Equal(t, 0, l.Waiting())
	})
}

func TestPortTokioLockTryLock(t *testing.T) {
	var l ctxsync.Lock
	require.True(t, l.TryLock())
	require.False(t, l.TryLock())
	l.Unlock()
	require.True(t, l.TryLock())
	l.Unlock()
}
