package ctxsync

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPortAsyncioQueueCloseNowGivesMemoryBack pins a pinned buffer: Queue's
// doc says its memory "is given back as the queue drains", and a drain by
// Get or TryGet does give it back, but CloseNow, which drains the queue at
// once, left the ring at the size of the burst: it pops with putMu held, so
// the shrink on each pop (a TryLock of putMu) never ran. A closed queue kept
// for the life of a service then pinned the largest burst it ever held. The
// right behaviour is PriorityQueue's: CloseNow leaves the store no larger
// than a drained one (storeMinShrink).
func TestPortAsyncioQueueCloseNowGivesMemoryBack(t *testing.T) {
	const burst = 10_000
	q := NewQueue[int](0)
	pq := NewPriorityQueue[int](0)
	for i := range burst {
		require.True(t, q.TryPut(i))
		require.True(t, pq.TryPut(i, i))
	}
	require.Len(t, q.CloseNow(), burst)
	require.Len(t, pq.CloseNow(), burst)
	require.LessOrEqual(t, cap(pq.core.items.items), storeMinShrink, "PriorityQueue's heap after CloseNow")
	require.LessOrEqual(t, len(q.ring.buf), storeMinShrink, "Queue's ring after CloseNow, from a burst of %d", burst)

	// The drain by Get on a closed queue, for comparison, gives it back.
	q = NewQueue[int](0)
	for i := range burst {
		require.True(t, q.TryPut(i))
	}
	q.Close()
	for range burst {
		_, err := q.Get(context.Background())
		require.NoError(t, err)
	}
	require.LessOrEqual(t, len(q.ring.buf), storeMinShrink, "Queue's ring drained by Get")
}
