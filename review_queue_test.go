package ctxsync_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestReviewHandedStraightToConsumerIsTaken: an item that a Put hands to a
// consumer waiting in Get (or in All) is taken at once: CloseNow does not
// hand it back, a TaskDone is owed for it and accepted, one more panics, and
// Join waits for it alone.
func TestReviewHandedStraightToConsumerIsTaken(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		for _, capacity := range []int{0, 1, math.MaxInt} {
			synctest.Test(t, func(t *testing.T) {
				q := newQ(capacity)
				got := make(chan int, 1)
				go func() {
					for v := range q.All(context.Background()) {
						got <- v
						return
					}
				}()
				synctest.Wait() // waiting in Get
				require.NoError(t, q.Put(context.Background(), 7))
				require.NoError(t, q.Put(context.Background(), 8))
				require.Equal(t, 7, <-got)
				joined := make(chan error, 1)
				go func() { joined <- q.Join(context.Background()) }()
				synctest.Wait()
				require.Empty(t, joined)
				require.Equal(t, []int{8}, q.CloseNow())
				require.Equal(t, 1, q.Unfinished())
				synctest.Wait()
				require.Empty(t, joined, "the item taken is not done")
				require.True(t, tryTaskDone(t, q))
				require.NoError(t, <-joined)
				require.False(t, tryTaskDone(t, q), "one TaskDone per item taken")
				require.Zero(t, q.Unfinished())
			})
		}
	})
}

// TestReviewCloseNowReleasesJoinWhenTakenAreDone: every item taken is done
// and items are left queued; a Join waits for them. CloseNow, handing them
// back, releases it; a TaskDone for an item never taken panics before and
// after, and Unfinished never goes below zero.
func TestReviewCloseNowReleasesJoinWhenTakenAreDone(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(0)
			for v := range 5 {
				require.NoError(t, q.Put(context.Background(), v))
			}
			for range 2 {
				_, ok := q.TryGet()
				require.True(t, ok)
				require.True(t, tryTaskDone(t, q))
			}
			require.False(t, tryTaskDone(t, q), "TaskDone for an item still queued")
			require.Equal(t, 3, q.Unfinished())
			joined := make(chan error, 1)
			go func() { joined <- q.Join(context.Background()) }()
			synctest.Wait()
			require.Empty(t, joined)
			require.Len(t, q.CloseNow(), 3)
			require.NoError(t, <-joined)
			require.False(t, tryTaskDone(t, q))
			require.Zero(t, q.Unfinished())
			require.Empty(t, q.CloseNow())
			require.NoError(t, q.Join(context.Background()))
		})
	})
}
