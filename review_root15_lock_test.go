package ctxsync_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// TestLockWaitingCountsNotifiedConditionWaiters pins what Lock.Waiting counts:
// every goroutine queued for the Lock, those in Lock and the waiters of a
// Condition on it that were notified (or whose ctx ended) and wait to take it
// again. Condition.Waiting counts those still waiting for a notification, so
// between them they count each goroutine blocked in a Wait once.
func TestLockWaitingCountsNotifiedConditionWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := ctxsync.NewLock()
		c := ctxsync.NewCondition(l)
		var mu sync.Mutex
		var order []string
		done := func(name string) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		}
		wait := func(name string, ctx context.Context) {
			assert.NoError(t, l.Lock(context.Background()))
			err := c.Wait(ctx)
			done(name)
			l.Unlock()
			assert.Equal(t, ctx.Err(), err, name)
		}
		ctx, cancel := context.WithCancel(t.Context())
		go wait("a", t.Context())
		synctest.Wait()
		go wait("b", t.Context())
		synctest.Wait()
		go wait("cancelled", ctx)
		synctest.Wait()
		require.Equal(t, 3, c.Waiting())
		require.Zero(t, l.Waiting())

		require.NoError(t, l.Lock(t.Context()))
		go func() {
			assert.NoError(t, l.Lock(context.Background()))
			done("locker")
			l.Unlock()
		}()
		synctest.Wait()
		require.Equal(t, 1, l.Waiting(), "the goroutine in Lock")

		c.Notify(2) // a and b: they find the Lock taken and queue
		synctest.Wait()
		require.Equal(t, 1, c.Waiting())
		require.Equal(t, 3, l.Waiting(), "the goroutine in Lock, and a and b")
		cancel() // the cancelled Wait takes the Lock again, after them
		synctest.Wait()
		require.Zero(t, c.Waiting())
		require.Equal(t, 4, l.Waiting())

		l.Unlock()
		synctest.Wait()
		require.Zero(t, l.Waiting())
		require.False(t, l.Locked())
		require.Equal(t, []string{"locker", "a", "b", "cancelled"}, order)
	})
}
