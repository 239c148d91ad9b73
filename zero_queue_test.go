package ctxsync_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// The zero Queue and the zero PriorityQueue are empty, unbounded queues, ready
// to use: every method works on them, the task accounting too.
func TestZeroQueues(t *testing.T) {
	ctx := context.Background()
	t.Run("Queue", func(t *testing.T) {
		var q ctxsync.Queue[int]
		require.Zero(t, q.Len())
		_, ok := q.TryGet()
		require.False(t, ok)
		require.NoError(t, q.Join(ctx), "nothing unfinished")
		for i := range 100 { // unbounded: never waits
			require.NoError(t, q.Put(ctx, i))
		}
		require.True(t, q.TryPut(100))
		require.Equal(t, 101, q.Len())
		v, err := q.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, 0, v)
		q.TaskDone()
		q.Close()
		n := 0
		for v := range q.All(ctx) {
			require.Equal(t, n+1, v)
			n++
			q.TaskDone()
		}
		require.Equal(t, 100, n)
		require.NoError(t, q.Join(ctx))
		_, err = q.Get(ctx)
		require.ErrorIs(t, err, ctxsync.ErrClosed)
	})
	t.Run("PriorityQueue", func(t *testing.T) {
		var q ctxsync.PriorityQueue[string]
		require.Zero(t, q.Len())
		_, ok := q.TryGet()
		require.False(t, ok)
		require.NoError(t, q.Put(ctx, 2, "b"))
		require.True(t, q.TryPut(1, "a"))
		require.NoError(t, q.Put(ctx, 2, "c"))
		for _, want := range []string{"a", "b", "c"} {
			v, err := q.Get(ctx)
			require.NoError(t, err)
			require.Equal(t, want, v)
		}
		q.Close()
		_, err := q.Get(ctx)
		require.ErrorIs(t, err, ctxsync.ErrClosed)
		require.ErrorIs(t, q.Put(ctx, 1, "x"), ctxsync.ErrClosed)
	})
}
