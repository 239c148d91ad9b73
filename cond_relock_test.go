package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// The tests of this file pin the order in which notified waiters take a
// Condition's Lock again (see TestPortAsyncioConditionNotifiedRelockInOrder
// for the defect they were written against).

// TestConditionRelockOrderAcrossNotifications: eight waiters are notified one
// Notify(1) at a time while the Lock is held, and all of them run, finding it
// held, before it is unlocked.
//
// What was wrong: each notified waiter queued for the Lock once its goroutine
// ran, in whatever order the scheduler ran them, so a waiter notified later
// could take the Lock before one notified earlier (in most runs they did not
// come out in order). What is right: a waiter notified earlier takes the Lock
// before one notified later.
func TestConditionRelockOrderAcrossNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		var got pyLog
		tasks := condWaiters(c, &got, 8)
		require.NoError(t, c.Lock(t.Context()))
		for range 8 {
			c.Notify(1)
		}
		synctest.Wait() // every notified waiter now waits for the Lock
		require.Empty(t, got.get())
		c.Unlock()
		for _, tk := range tasks {
			require.NoError(t, tk.result())
		}
		require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, got.get())
	})
}

// TestConditionRelockOrderLockFree: NotifyAll made without the Lock, while it
// is free, wakes eight waiters, who take it in the order they were notified.
// (What was wrong: as above; the youngest, readied last, usually ran first
// and took the free Lock.)
func TestConditionRelockOrderLockFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		var got pyLog
		tasks := condWaiters(c, &got, 8)
		c.NotifyAll()
		for _, tk := range tasks {
			require.NoError(t, tk.result())
		}
		require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, got.get())
	})
}

// TestConditionWaitForTakesTurns: four consumers WaitFor a token; each round
// the producer adds one and calls NotifyAll, and the consumer that takes the
// token goes back to the end of the line once the others wait again.
//
// What was wrong: the woken consumers raced for the Lock, and whichever the
// scheduler ran first took the token; the one that had waited longest could
// lose every round and starve, though the package promises first in, first
// out. What is right: the consumers notified together take the Lock in the
// order they were notified, so the one that has waited longest finds the
// token, and they take turns.
//
// (The consumer that took the token waits for the round to end before it
// locks again: a Lock call made before the notified waiters have run may take
// the Lock before them, as Condition's doc says.)
func TestConditionWaitForTakesTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const consumers, rounds = 4, 24
		c := ctxsync.NewCondition(nil)
		tokens := 0 // guarded by c's Lock
		var got pyLog
		ctx, cancel := context.WithCancel(t.Context())
		var again [consumers]chan struct{}
		for i := range consumers {
			again[i] = make(chan struct{})
			go func() {
				for {
					if err := c.Lock(ctx); err != nil {
						return
					}
					err := c.WaitFor(ctx, func() bool { return tokens > 0 })
					if err == nil {
						tokens--
						got.add(i)
					}
					c.Unlock()
					if err != nil {
						return
					}
					select {
					case <-again[i]:
					case <-ctx.Done():
						return
					}
				}
			}()
			synctest.Wait() // consumer i waits, behind the ones before it
		}
		for r := range rounds {
			require.NoError(t, c.Lock(t.Context()))
			tokens++
			c.NotifyAll()
			c.Unlock()
			synctest.Wait()
			g := got.get()
			require.Len(t, g, r+1)
			again[g[r]] <- struct{}{}
			synctest.Wait() // the taker waits again, behind the others
		}
		cancel()
		synctest.Wait()
		want := make([]int, rounds)
		for i := range want {
			want[i] = i % consumers
		}
		require.Equal(t, want, got.get(), "the consumer that waited longest takes the token")
	})
}
