package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// Regression: a Weighted's waiter at the head of the queue whose ctx ended
// kept the waiters flag set until its goroutine ran again (or a Release came
// by), and TryAcquire refused in the meantime, with units free and nobody
// waiting: a caller shedding load with TryAcquire turned work away with
// capacity to spare, on a loaded machine for as long as that goroutine
// waited to run. (The same class as the Semaphore's permit left out of
// reach by a waiter that gave up.) Right: TryAcquire that finds the units
// it asks for free behind the flag looks at the queue, and a queue of
// waiters that have all given up is no queue.
func TestReview13WeightedTryAcquirePastGoneHead(t *testing.T) {
	testutil.OneProcessor(t) // the waiter cannot run between the cancel and the look
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(10)
		require.True(t, w.TryAcquire(8))
		ctx, cancel := context.WithCancel(t.Context())
		gave := make(chan error, 1)
		go func() { gave <- w.Acquire(ctx, 5) }()
		synctest.Wait() // queued: 2 units free, 5 asked
		require.Equal(t, 1, w.Waiting())
		require.False(t, w.TryAcquire(1), "a live waiter at the head: TryAcquire must not overtake it")
		cancel() // it gives up; its goroutine has not run since
		require.True(t, w.TryAcquire(2), "2 units free, and the only waiter gave up")
		require.Equal(t, context.Canceled, <-gave)
		require.Equal(t, int64(0), w.Available())
		w.Release(10)
		require.Equal(t, int64(10), w.Available())
		require.True(t, w.TryAcquire(10))
	})
}
