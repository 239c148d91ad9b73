package ctxsync_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestQueueGaugesForgetDroppedWaiters pins a bug of Queue's Getters and
// Putters: a Put (or a Get) that passed over a waiter whose ctx had ended
// took it out of the queue, but the gauge kept counting it until its
// goroutine ran again. Getters then said a consumer waited while an item sat
// in the queue and nobody was in line for it; PriorityQueue's said 0. Once a
// waiter is out of the line, neither gauge counts it: Getters() == 0 means
// nobody waits, for both queues alike.
func TestQueueGaugesForgetDroppedWaiters(t *testing.T) {
	testutil.OneProcessor(t) // the waiters cannot run between the cancel and the look
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](1)
		pq := ctxsync.NewPriorityQueue[int](1)
		full := ctxsync.NewQueue[int](1)
		fullPQ := ctxsync.NewPriorityQueue[int](1)
		require.NoError(t, full.Put(t.Context(), 0))
		require.NoError(t, fullPQ.Put(t.Context(), 0, 0))

		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = q.Get(ctx) })
		wg.Go(func() { _, _ = pq.Get(ctx) })
		wg.Go(func() { _ = full.Put(ctx, 1) })
		wg.Go(func() { _ = fullPQ.Put(ctx, 0, 1) })
		synctest.Wait()
		require.Equal(t, 1, q.Getters())
		require.Equal(t, 1, pq.Getters())
		require.Equal(t, 1, full.Putters())
		require.Equal(t, 1, fullPQ.Putters())

		cancel()
		// Each call passes over the waiter whose ctx ended, before its
		// goroutine runs again (one processor, and this one does not block).
		require.NoError(t, q.Put(t.Context(), 1))
		require.NoError(t, pq.Put(t.Context(), 0, 1))
		_, err := full.Get(t.Context())
		require.NoError(t, err)
		_, err = fullPQ.Get(t.Context())
		require.NoError(t, err)

		require.Equal(t, 1, q.Len(), "the item put is queued: the Get had given up")
		require.Equal(t, pq.Getters(), q.Getters(), "Getters of Queue and PriorityQueue after the same steps")
		require.Zero(t, q.Getters(), "Getters with an item queued and the only Get given up")
		require.Equal(t, fullPQ.Putters(), full.Putters(), "Putters of Queue and PriorityQueue after the same steps")
		require.Zero(t, full.Putters(), "Putters with the only Put given up")
		wg.Wait()
		require.Zero(t, q.Getters())
		require.Zero(t, full.Putters())
	})
}
