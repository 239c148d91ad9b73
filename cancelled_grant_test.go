package ctxsync_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// The rule these tests pin: a waiter whose ctx has ended is never granted
// anything. Each sets up a waiter, then, from another goroutine, ends its ctx
// and only then frees what it waits for. Its call must fail, whatever the
// interleaving, and what was freed must still be there for others. (x/sync
// pins the same for its semaphore: TestWeightedAcquireCanceled,
// golang/go#63615.) Before the rule held, the waiter got the grant in some
// runs: Weighted in about 1 in 30, Queue.Get in most.

// cancelThenFree runs rounds of: call(ctx) in this goroutine while another
// goroutine cancels ctx and then calls free. call must fail with
// context.Canceled.
func cancelThenFree(t *testing.T, rounds int, setup func() (call func(context.Context) error, free func(), check func())) {
	t.Helper()
	for round := range testutil.HammerRounds(rounds) {
		call, free, check := setup()
		ctx, cancel := context.WithCancel(context.Background())
		freed := make(chan struct{})
		go func() {
			defer close(freed)
			for range round % 3 { // vary where the cancel lands
				runtime.Gosched()
			}
			cancel()
			free()
		}()
		err := call(ctx)
		<-freed
		require.Equal(t, context.Canceled, err, "round %d: granted something freed after its ctx ended", round)
		check()
	}
}

func TestCancelledWaiterNotGrantedWeighted(t *testing.T) {
	var w *ctxsync.Weighted
	cancelThenFree(t, 2000, func() (func(context.Context) error, func(), func()) {
		w = ctxsync.NewWeighted(2)
		require.NoError(t, w.Acquire(context.Background(), 1))
		return acquireOf(w, 2), func() { w.Release(1) }, func() {
			require.True(t, w.TryAcquire(2), "the units are all free again")
		}
	})
}

func TestCancelledWaiterNotGrantedLock(t *testing.T) {
	var l *ctxsync.Lock
	cancelThenFree(t, 2000, func() (func(context.Context) error, func(), func()) {
		l = ctxsync.NewLock()
		require.NoError(t, l.Lock(context.Background()))
		return l.Lock, l.Unlock, func() { require.True(t, l.TryLock()) }
	})
}

func TestCancelledWaiterNotGrantedRWLock(t *testing.T) {
	var rw *ctxsync.RWLock
	for _, reader := range []bool{false, true} {
		cancelThenFree(t, 1000, func() (func(context.Context) error, func(), func()) {
			rw = ctxsync.NewRWLock()
			require.NoError(t, rw.Lock(context.Background()))
			call := rw.Lock
			if reader {
				call = rw.RLock
			}
			return call, rw.Unlock, func() { require.True(t, rw.TryLock()) }
		})
	}
}

func TestCancelledWaiterNotGrantedSemaphore(t *testing.T) {
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			var s semaphore
			cancelThenFree(t, 2000, func() (func(context.Context) error, func(), func()) {
				s = k.new(1)
				require.NoError(t, s.Acquire(context.Background()))
				return s.Acquire, s.Release, func() {
					require.Equal(t, 1, s.Available())
					require.Equal(t, 0, s.Waiting())
				}
			})
		})
	}
}

func TestCancelledWaiterNotGrantedQueueGet(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		var q intQueue
		cancelThenFree(t, 2000, func() (func(context.Context) error, func(), func()) {
			q = newQ(0)
			get := func(ctx context.Context) error { _, err := q.Get(ctx); return err }
			put := func() { require.NoError(t, q.Put(context.Background(), 1)) }
			return get, put, func() {
				v, ok := q.TryGet()
				require.True(t, ok, "the item stayed in the queue")
				require.Equal(t, 1, v)
			}
		})
	})
}

func TestCancelledWaiterNotGrantedQueuePut(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		var q intQueue
		cancelThenFree(t, 2000, func() (func(context.Context) error, func(), func()) {
			q = newQ(1)
			require.True(t, q.TryPut(1))
			put := func(ctx context.Context) error { return q.Put(ctx, 2) }
			get := func() {
				v, ok := q.TryGet()
				require.True(t, ok)
				require.Equal(t, 1, v)
			}
			return put, get, func() { require.Zero(t, q.Len(), "the cancelled put left no item") }
		})
	})
}

func TestCancelledWaiterNotGrantedJoin(t *testing.T) {
	var q *ctxsync.Queue[int]
	cancelThenFree(t, 2000, func() (func(context.Context) error, func(), func()) {
		q = ctxsync.NewQueue[int](0)
		require.True(t, q.TryPut(1))
		_, ok := q.TryGet()
		require.True(t, ok)
		return q.Join, q.TaskDone, func() { require.NoError(t, q.Join(context.Background())) }
	})
}

// TestQueueItemNotLostAtClose pins a lost item: a consumer handed an item as
// its ctx ended used to put it back only when it next ran. In between, Close
// and another consumer's Get saw a closed, empty queue, and the item then
// reappeared in a queue that nobody read. Worker A ranges over the queue with
// a ctx that ends; then an item is put and the queue closed; worker B, which
// ranges until the queue is closed and empty, must get the item.
func TestQueueItemNotLostAtClose(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		for round := range testutil.HammerRounds(1000) {
			q := newQ(0)
			ctxA, cancelA := context.WithCancel(context.Background())
			gotA, gotB := make(chan int, 1), make(chan int, 1)
			ranging := func(ctx context.Context, got chan<- int) {
				n := 0
				for {
					if _, err := q.Get(ctx); err != nil {
						got <- n
						return
					}
					n++
				}
			}
			go ranging(ctxA, gotA)
			go ranging(context.Background(), gotB)
			for range round % 4 {
				runtime.Gosched()
			}
			cancelA()
			require.NoError(t, q.Put(context.Background(), 1))
			q.Close()
			a, b := <-gotA, <-gotB
			require.Zero(t, a, "round %d: A's ctx ended before the put", round)
			require.Equal(t, 1, b, "round %d: the item was lost", round)
			require.Zero(t, q.Len(), "round %d: an item reappeared after ErrClosed", round)
		}
	})
}

// TestQueueOrderKeptWhenConsumersCancel pins a reordering: two waiting
// consumers handed items 1 and 2 as both their ctxs ended each put theirs back
// at the front, and the queue yielded 2 before 1. A PriorityQueue put them
// back ahead of their equals.
func TestQueueOrderKeptWhenConsumersCancel(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(0)
			ctx1, cancel1 := context.WithCancel(t.Context())
			ctx2, cancel2 := context.WithCancel(t.Context())
			g1 := getAsync(ctx1, q)
			synctest.Wait()
			g2 := getAsync(ctx2, q)
			synctest.Wait()
			cancel1()
			cancel2()
			for v := 1; v <= 3; v++ {
				require.NoError(t, q.Put(t.Context(), v))
			}
			for _, g := range []<-chan gotItem{g1, g2} {
				r := <-g
				require.Equal(t, context.Canceled, r.err)
			}
			for want := 1; want <= 3; want++ {
				v, ok := q.TryGet()
				require.True(t, ok)
				require.Equal(t, want, v, "items out of order")
			}
		})
	})
}

// TestQueueGetKeepsItemGrantedBeforeCtxEnded: an item handed to a waiting
// consumer before its ctx ends is the consumer's, even if the consumer sees
// the ctx end first when it wakes: Get returns it.
func TestQueueGetKeepsItemGrantedBeforeCtxEnded(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		testutil.OneProcessor(t)
		synctest.Test(t, func(t *testing.T) {
			q := newQ(0)
			ctx, cancel := context.WithCancel(t.Context())
			g := getAsync(ctx, q)
			synctest.Wait()
			require.True(t, q.TryPut(7)) // granted: the consumer has not run since
			cancel()
			r := <-g
			if r.err == nil {
				require.Equal(t, 7, r.v)
				require.Zero(t, q.Len())
			} else {
				t.Fatalf("Get = %v, %v: an item granted before ctx ended was dropped or handed back", r.v, r.err)
			}
		})
	})
}
