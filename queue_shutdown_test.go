package ctxsync_test

import (
	"context"
	"iter"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// taskQueue is what Queue and PriorityQueue share for task accounting and
// shutdown.
type taskQueue interface {
	intQueue
	TaskDone()
	Join(ctx context.Context) error
	Unfinished() int
	CloseNow() []int
	All(ctx context.Context) iter.Seq[int]
}

type pqTasks struct{ samePriority }

type qTasks struct{ *ctxsync.Queue[int] }

func forEachTaskQueue(t *testing.T, f func(t *testing.T, newQ func(capacity int) taskQueue)) {
	t.Run("Queue", func(t *testing.T) {
		f(t, func(c int) taskQueue { return qTasks{ctxsync.NewQueue[int](c)} })
	})
	t.Run("PriorityQueue", func(t *testing.T) {
		f(t, func(c int) taskQueue { return pqTasks{samePriority{ctxsync.NewPriorityQueue[int](c)}} })
	})
}

// TestCloseNow: the items left come out in order and count as done; waiting
// producers and consumers are released with ErrClosed; Join then waits only
// for the items taken.
func TestCloseNow(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(3)
			for v := 1; v <= 3; v++ {
				require.NoError(t, q.Put(t.Context(), v))
			}
			put := putAsync(t.Context(), q, 4) // waits for room
			v, err := q.Get(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, v)
			synctest.Wait()
			require.Equal(t, 4, q.Unfinished(), "3 queued (4 let in), 1 taken")
			joined := make(chan error, 1)
			go func() { joined <- q.Join(t.Context()) }()

			require.Equal(t, []int{2, 3, 4}, q.CloseNow())
			require.Zero(t, q.Len())
			require.Equal(t, 1, q.Unfinished(), "the one taken")
			require.NoError(t, <-put, "let in before CloseNow")
			_, err = q.Get(t.Context())
			require.ErrorIs(t, err, ctxsync.ErrClosed)
			require.ErrorIs(t, q.Put(t.Context(), 5), ctxsync.ErrClosed)
			synctest.Wait()
			require.Empty(t, joined, "Join waits for the item taken")
			q.TaskDone()
			require.NoError(t, <-joined)
			require.Zero(t, q.Unfinished())
			require.Panics(t, q.TaskDone)
			require.Nil(t, q.CloseNow(), "nothing left")
		})
	})
}

// TestCloseNowReleasesWaiters: consumers waiting on an empty queue get
// ErrClosed at once; producers waiting for room too.
func TestCloseNowReleasesWaiters(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(0)
			g := getAsync(t.Context(), q)
			synctest.Wait()
			require.Empty(t, q.CloseNow())
			require.ErrorIs(t, (<-g).err, ctxsync.ErrClosed)

			q = newQ(1)
			require.True(t, q.TryPut(1))
			p := putAsync(t.Context(), q, 2)
			synctest.Wait()
			require.Equal(t, []int{1}, q.CloseNow())
			require.ErrorIs(t, <-p, ctxsync.ErrClosed, "never let in")
			require.NoError(t, q.Join(t.Context()), "the one item was handed back")
		})
	})
}

// TestGracefulDrain is the recipe in Queue.CloseNow's doc: workers ranging
// over All with a ctx that ends leave items queued, and Join would wait for
// them for ever; after the workers stop, CloseNow hands them back and Join
// returns once the items taken are done.
func TestGracefulDrain(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(0)
			for v := range 10 {
				require.NoError(t, q.Put(t.Context(), v))
			}
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			var workers sync.WaitGroup
			var mu sync.Mutex
			var done []int
			for range 2 {
				workers.Go(func() {
					for v := range q.All(ctx) {
						mu.Lock()
						done = append(done, v)
						if len(done) == 3 {
							stop() // the signal comes mid-way
						}
						mu.Unlock()
						q.TaskDone()
					}
				})
			}
			workers.Wait()
			left := q.CloseNow()
			require.Len(t, append(append([]int(nil), done...), left...), 10, "every item done or handed back")
			require.NoError(t, q.Join(t.Context()))
		})
	})
}

// TestPriorityQueueTasks: a PriorityQueue has Queue's task accounting, and
// All yields in priority order.
func TestPriorityQueueTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewPriorityQueue[string](0)
		require.NoError(t, q.Join(t.Context()), "nothing put")
		require.PanicsWithValue(t, "ctxsync: PriorityQueue.TaskDone called more times than items were put", q.TaskDone)
		require.NoError(t, q.Put(t.Context(), 2, "b"))
		require.NoError(t, q.Put(t.Context(), 1, "a"))
		require.NoError(t, q.Put(t.Context(), 3, "c"))
		require.Equal(t, 3, q.Unfinished())
		joined := make(chan error, 1)
		go func() { joined <- q.Join(t.Context()) }()
		q.Close()
		var got []string
		for v := range q.All(t.Context()) {
			got = append(got, v)
			synctest.Wait()
			require.Empty(t, joined)
			q.TaskDone()
		}
		require.Equal(t, []string{"a", "b", "c"}, got)
		require.NoError(t, <-joined)
		require.Zero(t, q.Unfinished())
		require.Equal(t, context.Canceled, q.Join(testutil.Cancelled()))
	})
}
