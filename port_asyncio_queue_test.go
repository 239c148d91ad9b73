package ctxsync_test

// A port of CPython's asyncio queue tests (Lib/test/test_asyncio/test_queues.py,
// the version of Python 3.13 and later) to Queue and PriorityQueue: its
// QueueBasicTests, QueueGetTests, QueuePutTests, PriorityQueueTests and
// QueueJoinTests here, its shutdown tests in
// port_asyncio_queue_shutdown_test.go. Each case is written to ctxsync's
// documented behaviour. Where the peer runs a case for asyncio.Queue alone, it
// runs here on Queue and on PriorityQueue (all items at one priority, where it
// must be FIFO too), as subtests. The peer's "let the loop run" is
// synctest.Wait, its cancelled task a cancelled ctx, its wait_for a
// context.WithTimeout, all in a bubble.
//
// Where asyncio differs from ctxsync by design:
//   - Repr, Str: no string form. What the peer reads in it (a getter waiting,
//     a putter waiting, the items) is read from Getters, Putters and Len.
//   - Full, Empty: no such methods; Len against Cap, and TryPut, say it.
//   - NonblockingGetException, NonblockingPutException: get_nowait and
//     put_nowait raise QueueEmpty and QueueFull; TryGet and TryPut return false.
//   - GetWithPutters: the peer plants a bare future among the putters; here a
//     real Put waits, and its item goes in when Get makes room.
//   - GetCancelDropOnePendingReader, PutCancelDrop: the peer accepts either
//     outcome (the call fails and a retry finds the item, or the call
//     succeeds). Get and Put here hand the item over when the other side
//     acts, before the cancel, and keep it: the call returns nil (their docs),
//     and the test asks for that.
//   - GetCancelDropManyPendingReaders: the peer's first reader, cancelled after
//     both puts, raises CancelledError and the other two get the items; here
//     the first put handed item 1 to the first reader before its ctx ended,
//     and it keeps it (Get's doc), so the first two readers get 1 and 2 and
//     the third is released by Close.
//   - CancelledPutSilenceValueErrorException: the peer's put, woken by
//     get_nowait and then cancelled, raises and puts nothing; here TryGet let
//     the waiting item in before the cancel, so Put returns nil and the item is
//     queued (Put's doc).
//   - TaskDoneUnderflow: the peer raises ValueError; TaskDone here panics with
//     a "ctxsync:" message, as misuse does. Its bound is the items taken, not
//     the items put: a TaskDone for an item still queued panics too (its doc
//     says why), where the peer lets it pass.
//   - TaskDone: the peer stops its workers with one sentinel item each; here
//     their ctx ends, which needs no item that Join would count.
//   - Format (join): no format string; Cap and Unfinished say what it shows.
//   - BlockingGetWait, BlockingPutWait: loop.call_later is time.AfterFunc in
//     the bubble; no assertion on the time.
//
// Skipped, with no counterpart:
//   - LifoQueueTests.test_order and LifoQueueJoinTests: ctxsync has no LIFO
//     queue.
//   - test_generic_alias: a detail of Python's typing; Go checks type
//     arguments at compile time.
//   - test_float_maxsize: a capacity is an int here; a fractional one cannot
//     be given.

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// pyQueue is what the port asks of both queues: task accounting, shutdown
// and the gauges.
type pyQueue interface {
	taskQueue
	Cap() int
	Getters() int
	Putters() int
}

// forEachPyQueue runs f on a Queue and on a PriorityQueue whose items all
// have one priority.
func forEachPyQueue(t *testing.T, f func(t *testing.T, newQ func(capacity int) pyQueue)) {
	t.Run("Queue", func(t *testing.T) {
		f(t, func(c int) pyQueue { return qTasks{ctxsync.NewQueue[int](c)} })
	})
	t.Run("PriorityQueue", func(t *testing.T) {
		f(t, func(c int) pyQueue { return pqTasks{samePriority{ctxsync.NewPriorityQueue[int](c)}} })
	})
}

// inBubble runs f in a synctest bubble, once for each queue kind.
func inBubble(t *testing.T, f func(t *testing.T, newQ func(capacity int) pyQueue)) {
	forEachPyQueue(t, func(t *testing.T, newQ func(capacity int) pyQueue) {
		synctest.Test(t, func(t *testing.T) { f(t, newQ) })
	})
}

// stillWaiting reports whether the buffered channel ch, which a call fills when
// it returns, is still empty: the call still waits, once synctest.Wait has
// let everything else run.
func stillWaiting[T any](ch <-chan T) bool { return len(ch) == 0 }

func TestPortAsyncioQueueRepr(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()

		q := newQ(0)
		got := getAsync(ctx, q)
		synctest.Wait()
		require.Equal(t, 1, q.Getters(), "Getters with a Get waiting")
		require.True(t, q.TryPut(0))
		g := <-got
		require.NoError(t, g.err)
		require.Equal(t, 0, g.v)
		require.Equal(t, 0, q.Getters(), "Getters once it got its item")

		q = newQ(1)
		require.True(t, q.TryPut(1))
		put := putAsync(ctx, q, 2)
		synctest.Wait()
		require.Equal(t, 1, q.Putters(), "Putters with a Put waiting")
		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, 1, v)
		require.NoError(t, <-put)
		require.Equal(t, 0, q.Putters(), "Putters once its item went in")

		q = newQ(0)
		require.True(t, q.TryPut(1))
		require.Equal(t, 1, q.Len())
	})
}

func TestPortAsyncioQueueEmpty(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(0)
		require.Equal(t, 0, q.Len())
		require.NoError(t, q.Put(ctx, 1))
		require.Equal(t, 1, q.Len())
		v, err := q.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, v)
		require.Equal(t, 0, q.Len())
	})
}

func TestPortAsyncioQueueFull(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(0)
		require.Equal(t, 0, q.Cap(), "an unbounded queue is never full")
		require.True(t, q.TryPut(1))

		q = newQ(1)
		require.NoError(t, q.Put(ctx, 1))
		require.Equal(t, q.Cap(), q.Len())
		require.False(t, q.TryPut(2), "TryPut on a full queue")
	})
}

func TestPortAsyncioQueueOrder(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(0)
		for _, v := range []int{1, 3, 2} {
			require.NoError(t, q.Put(ctx, v))
		}
		var got []int
		for range 3 {
			v, err := q.Get(ctx)
			require.NoError(t, err)
			got = append(got, v)
		}
		require.Equal(t, []int{1, 3, 2}, got)
	})
}

func TestPortAsyncioQueueMaxsize(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(2)
		require.Equal(t, 2, q.Cap())
		var mu sync.Mutex
		var put []int
		putSoFar := func() []int {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(put)
		}
		done := make(chan error, 1)
		go func() {
			for i := range 3 {
				if err := q.Put(ctx, i); err != nil {
					done <- err
					return
				}
				mu.Lock()
				put = append(put, i)
				mu.Unlock()
			}
			done <- nil
		}()
		synctest.Wait()
		require.Equal(t, []int{0, 1}, putSoFar(), "the putter waits after two items")
		v, err := q.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, 0, v)

		synctest.Wait()
		require.Equal(t, []int{0, 1, 2}, putSoFar(), "a Get made room for the last item")
		for want := 1; want <= 2; want++ {
			v, err := q.Get(ctx)
			require.NoError(t, err)
			require.Equal(t, want, v)
		}
		require.NoError(t, <-done)
	})
}

func TestPortAsyncioQueueBlockingGet(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		require.True(t, q.TryPut(1))
		v, err := q.Get(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, v)
	})
}

func TestPortAsyncioQueueGetWithPutters(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(1)
		require.NoError(t, q.Put(ctx, 1))
		put := putAsync(ctx, q, 2)
		synctest.Wait()

		v, err := q.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, v)
		require.NoError(t, <-put, "the waiting Put, once Get made room")
		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, 2, v, "the waiting Put's item is queued")
	})
}

func TestPortAsyncioQueueBlockingGetWait(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		var finished atomic.Bool
		got := make(chan gotItem, 1)
		go func() {
			v, err := q.Get(context.Background())
			finished.Store(true)
			got <- gotItem{v, err}
		}()
		synctest.Wait()
		require.False(t, finished.Load(), "Get returned from an empty queue")
		time.AfterFunc(10*time.Millisecond, func() { q.TryPut(1) })
		g := <-got
		require.True(t, finished.Load())
		require.NoError(t, g.err)
		require.Equal(t, 1, g.v)
	})
}

func TestPortAsyncioQueueNonblockingGet(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		require.True(t, q.TryPut(1))
		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, 1, v)
	})
}

func TestPortAsyncioQueueNonblockingGetException(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		_, ok := newQ(0).TryGet()
		require.False(t, ok, "TryGet on an empty queue")
	})
}

func TestPortAsyncioQueueGetCancelledRace(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		ctx1, cancel1 := context.WithCancel(context.Background())
		t1 := getAsync(ctx1, q)
		synctest.Wait() // t1 queues first
		t2 := getAsync(context.Background(), q)
		synctest.Wait()

		cancel1()
		synctest.Wait()
		g1 := <-t1
		require.ErrorIs(t, g1.err, context.Canceled)
		require.NoError(t, q.Put(context.Background(), 'a'))
		g2 := <-t2
		require.NoError(t, g2.err)
		require.Equal(t, int('a'), g2.v, "the item skips the cancelled Get")
		require.Equal(t, 0, q.Len())
	})
}

func TestPortAsyncioQueueGetWithWaitingPutters(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(1)
		a := putAsync(ctx, q, 'a')
		synctest.Wait() // 'a' goes in first
		b := putAsync(ctx, q, 'b')
		synctest.Wait()
		for _, want := range []int{'a', 'b'} {
			v, err := q.Get(ctx)
			require.NoError(t, err)
			require.Equal(t, want, v)
		}
		require.NoError(t, <-a)
		require.NoError(t, <-b)
	})
}

func TestPortAsyncioQueueWhyAreGettersWaiting(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		const n = 5
		q := newQ(1)
		var wg sync.WaitGroup
		var got []int
		wg.Go(func() {
			for i := range n {
				assert.NoError(t, q.Put(ctx, i))
			}
		})
		wg.Go(func() {
			for range n {
				v, err := q.Get(ctx)
				assert.NoError(t, err)
				got = append(got, v)
			}
		})
		wg.Wait() // a lost wake-up leaves both waiting: the bubble deadlocks
		require.Equal(t, []int{0, 1, 2, 3, 4}, got)
	})
}

func TestPortAsyncioQueueCancelledGettersNotBeingHeldInSelfGetters(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(5)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := q.Get(ctx)
		require.Equal(t, context.DeadlineExceeded, err, "Get past its deadline")
		require.Equal(t, 0, q.Getters(), "a Get that gave up still counts as waiting")
	})
}

func TestPortAsyncioQueueBlockingPut(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(0)
		require.NoError(t, q.Put(ctx, 1)) // unbounded: no wait
		v, err := q.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, v)
	})
}

func TestPortAsyncioQueueBlockingPutWait(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(1)
		var finished atomic.Bool
		done := make(chan error, 1)
		go func() {
			err := q.Put(ctx, 1)
			if err == nil {
				err = q.Put(ctx, 2)
			}
			finished.Store(true)
			done <- err
		}()
		synctest.Wait()
		require.False(t, finished.Load(), "the second Put went into a full queue")
		time.AfterFunc(10*time.Millisecond, func() { q.TryGet() })
		require.NoError(t, <-done)
		require.True(t, finished.Load())
		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, 2, v)
	})
}

func TestPortAsyncioQueueNonblockingPut(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		require.True(t, q.TryPut(1))
		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, 1, v)
	})
}

func TestPortAsyncioQueueGetCancelDropOnePendingReader(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		ctx, cancel := context.WithCancel(context.Background())
		reader := getAsync(ctx, q)
		synctest.Wait()

		require.True(t, q.TryPut(1))
		require.True(t, q.TryPut(2))
		cancel()
		g := <-reader
		// Item 1 was handed to the reader before its ctx ended: it keeps it.
		// Had Get failed, 1 would have to be still queued, ahead of 2.
		require.NoError(t, g.err, "Get handed an item before its ctx ended")
		require.Equal(t, 1, g.v, "a reader cancelled as items came dropped one")
		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, 2, v)
	})
}

func TestPortAsyncioQueueGetCancelDropManyPendingReaders(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		ctx1, cancel1 := context.WithCancel(context.Background())
		readers := make([]<-chan gotItem, 3)
		for i := range readers {
			ctx := context.Background()
			if i == 0 {
				ctx = ctx1
			}
			readers[i] = getAsync(ctx, q)
			synctest.Wait() // in this order
		}
		require.True(t, q.TryPut(1))
		require.True(t, q.TryPut(2))
		cancel1()
		synctest.Wait()
		require.True(t, stillWaiting(readers[2]), "a third reader got an item of two")
		q.Close()

		var got []int
		for i, r := range readers {
			g := <-r
			switch {
			case i < 2:
				require.NoError(t, g.err, "reader %d", i)
				got = append(got, g.v)
			default:
				require.ErrorIs(t, g.err, ctxsync.ErrClosed, "the reader left waiting, at Close")
			}
		}
		require.Equal(t, []int{1, 2}, got, "the readers in their order")
		require.Equal(t, 0, q.Len())
	})
}

func TestPortAsyncioQueuePutCancelDrop(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(1)
		require.True(t, q.TryPut(1))
		ctx, cancel := context.WithCancel(context.Background())
		writer := putAsync(ctx, q, 2)
		synctest.Wait()

		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, 1, v)
		cancel()
		// TryGet let the writer's item in before its ctx ended: Put keeps
		// it. An error here, with 2 queued, would have a retry put 2 twice.
		require.NoError(t, <-writer, "Put whose item went in before its ctx ended")
		v, ok = q.TryGet()
		require.True(t, ok)
		require.Equal(t, 2, v)
		require.Equal(t, 0, q.Len())
	})
}

func TestPortAsyncioQueueNonblockingPutException(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(1)
		require.True(t, q.TryPut(1))
		require.False(t, q.TryPut(2), "TryPut on a full queue")
	})
}

func TestPortAsyncioQueuePutCancelled(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(0)
		put := putAsync(ctx, q, 1)
		v, err := q.Get(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, v)
		require.NoError(t, <-put)
	})
}

func TestPortAsyncioQueuePutCancelledRace(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		bg := context.Background()
		q := newQ(1)
		putA := putAsync(bg, q, 'a')
		synctest.Wait()
		putB := putAsync(bg, q, 'b')
		synctest.Wait()
		ctxC, cancelC := context.WithCancel(bg)
		putC := putAsync(ctxC, q, 'X')
		synctest.Wait()
		require.NoError(t, <-putA)
		require.True(t, stillWaiting(putB), "Put b into a full queue returned")

		cancelC()
		synctest.Wait()
		require.ErrorIs(t, <-putC, context.Canceled)
		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, int('a'), v)
		synctest.Wait()
		v, ok = q.TryGet()
		require.True(t, ok)
		require.Equal(t, int('b'), v)
		require.NoError(t, <-putB)
		_, ok = q.TryGet()
		require.False(t, ok, "the cancelled Put's item came in")
	})
}

func TestPortAsyncioQueuePutWithWaitingGetters(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(0)
		got := getAsync(ctx, q)
		synctest.Wait()
		require.NoError(t, q.Put(ctx, 'a'))
		g := <-got
		require.NoError(t, g.err)
		require.Equal(t, int('a'), g.v)
	})
}

func TestPortAsyncioQueueWhyArePuttersWaiting(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		ctx := context.Background()
		q := newQ(2)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() { assert.NoError(t, q.Put(ctx, i)) })
		}
		synctest.Wait()
		require.Equal(t, 2, q.Putters())
		for range q.Len() {
			_, ok := q.TryGet()
			require.True(t, ok)
		}
		wg.Wait() // a putter left waiting with room free deadlocks the bubble
		require.Equal(t, 2, q.Len(), "the two putters that waited")
		require.Equal(t, 0, q.Putters())
	})
}

func TestPortAsyncioQueueCancelledPutsNotBeingHeldInSelfPutters(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(1)
		require.True(t, q.TryPut(1))
		ctx, cancel := context.WithCancel(context.Background())
		put := putAsync(ctx, q, 1)
		synctest.Wait()
		require.Equal(t, 1, q.Putters())
		cancel()
		require.ErrorIs(t, <-put, context.Canceled)
		require.Equal(t, 0, q.Putters(), "a Put that gave up still counts as waiting")
		require.Equal(t, 1, q.Len())
	})
}

func TestPortAsyncioQueueCancelledPutSilenceValueErrorException(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(1)
		require.True(t, q.TryPut(1))
		ctx, cancel := context.WithCancel(context.Background())
		put := putAsync(ctx, q, 2)
		synctest.Wait()

		_, ok := q.TryGet() // lets the waiting item in
		require.True(t, ok)
		cancel()
		require.NoError(t, <-put, "Put whose item went in before its ctx ended")
		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, 2, v)
	})
}

func TestPortAsyncioQueuePriorityQueueOrder(t *testing.T) {
	ctx := context.Background()
	q := ctxsync.NewPriorityQueue[int](0)
	for _, v := range []int{1, 3, 2} {
		require.NoError(t, q.Put(ctx, v, v)) // the peer's item is its own priority
	}
	var got []int
	for range 3 {
		v, err := q.Get(ctx)
		require.NoError(t, err)
		got = append(got, v)
	}
	require.Equal(t, []int{1, 2, 3}, got)
}

func TestPortAsyncioQueueTaskDoneUnderflow(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		testutil.RequirePanicPrefix(t, "ctxsync: ", q.TaskDone)
	})
}

func TestPortAsyncioQueueTaskDone(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		for i := range 100 {
			require.True(t, q.TryPut(i))
		}
		var sum atomic.Int64
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for {
					v, err := q.Get(ctx)
					if err != nil {
						return
					}
					sum.Add(int64(v))
					q.TaskDone()
				}
			})
		}
		require.NoError(t, q.Join(context.Background()))
		require.Equal(t, int64(99*100/2), sum.Load(), "the sum once Join returned")
		stop()
		wg.Wait()
		require.Equal(t, 0, q.Unfinished())
	})
}

func TestPortAsyncioQueueJoinEmptyQueue(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		require.NoError(t, q.Join(context.Background()))
		require.NoError(t, q.Join(context.Background()))
	})
}

func TestPortAsyncioQueueJoinFormat(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		require.Equal(t, 0, q.Cap())
		require.Equal(t, 0, q.Unfinished())
		require.True(t, q.TryPut(1))
		require.True(t, q.TryPut(2))
		require.Equal(t, 2, q.Unfinished())
	})
}
