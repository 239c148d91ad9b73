package ctxsync_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// TestGauges: the gauges that metrics read count the goroutines waiting,
// and forget those whose ctx ended.
func TestGauges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		start := func(n int, f func(context.Context) error) {
			for range n {
				wg.Go(func() { _ = f(ctx) })
			}
		}

		var l ctxsync.Lock
		require.Zero(t, l.Waiting())
		require.True(t, l.TryLock())
		start(2, l.Lock)

		var rw ctxsync.RWLock
		require.Zero(t, rw.Waiting())
		require.True(t, rw.TryLock())
		start(2, rw.RLock)
		start(1, rw.Lock)

		q := ctxsync.NewQueue[int](1)
		require.Equal(t, 1, q.Cap())
		start(3, func(ctx context.Context) error { _, err := q.Get(ctx); return err })
		synctest.Wait()
		require.Equal(t, 3, q.Getters())
		require.Zero(t, q.Putters())

		full := ctxsync.NewQueue[int](1)
		require.NoError(t, full.Put(t.Context(), 0))
		start(2, func(ctx context.Context) error { return full.Put(ctx, 1) })

		pq := ctxsync.NewPriorityQueue[int](0)
		require.Zero(t, pq.Cap())
		start(2, func(ctx context.Context) error { _, err := pq.Get(ctx); return err })
		fullPQ := ctxsync.NewPriorityQueue[int](1)
		require.NoError(t, fullPQ.Put(t.Context(), 0, 0))
		start(1, func(ctx context.Context) error { return fullPQ.Put(ctx, 0, 1) })

		synctest.Wait()
		require.Equal(t, 2, l.Waiting())
		require.Equal(t, 3, rw.Waiting())
		require.Equal(t, 2, full.Putters())
		require.Zero(t, full.Getters())
		require.Equal(t, 2, pq.Getters())
		require.Zero(t, pq.Putters())
		require.Equal(t, 1, fullPQ.Putters())
		require.Equal(t, 1, fullPQ.Cap())

		cancel()
		wg.Wait()
		require.Zero(t, l.Waiting())
		require.Zero(t, rw.Waiting())
		require.Zero(t, q.Getters())
		require.Zero(t, full.Putters())
		require.Zero(t, pq.Getters())
		require.Zero(t, fullPQ.Putters())
		l.Unlock()
		rw.Unlock()
	})
}

// TestGaugesOfZeroValues: the zero values' gauges read as empty.
func TestGaugesOfZeroValues(t *testing.T) {
	var q ctxsync.Queue[int]
	var pq ctxsync.PriorityQueue[int]
	var l ctxsync.Lock
	var rw ctxsync.RWLock
	require.Zero(t, q.Cap()+q.Getters()+q.Putters())
	require.Zero(t, pq.Cap()+pq.Getters()+pq.Putters())
	require.Zero(t, l.Waiting()+rw.Waiting())
}
