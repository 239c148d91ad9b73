package ctxsync

import (
	"context"
	"iter"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A Queue is a first-in, first-out queue for handing work between goroutines,
// with context-aware waits and asyncio.Queue's task accounting: TaskDone and
// Join let a producer wait until every item it put has been processed.
//
// A Queue has a capacity: Put waits while the queue holds that many items
// (backpressure), and TryPut fails. A capacity of 0 means unbounded. Get waits
// while the queue is empty. Producers and consumers that wait are served first
// in, first out. Memory follows the number of items held: it grows with a
// burst and is given back as the queue drains.
//
// Close stops new items: Put then fails with ErrClosed, while Get drains the
// items left, then fails with ErrClosed too.
//
// Use NewQueue; the zero Queue is not usable. A Queue must not be copied after
// first use. A Queue is safe for concurrent use by multiple goroutines.
//
// In the terminology of the Go memory model, a Put is synchronized before the
// Get that returns its item, and a TaskDone is synchronized before the return
// of any Join that it unblocks.
type Queue[T any] struct {
	_    nocopy.NoCopy
	ring ring[T] // the store: queueCore.items points here, beside the lock
	queueCore[T]

	// guarded by mu
	done    uint64               // TaskDone calls
	joiners waitq.List[struct{}] // Join calls waiting for done == accepted
}

// NewQueue returns an empty Queue that holds at most capacity items, or any
// number if capacity is 0.
//
// NewQueue panics if capacity is negative.
func NewQueue[T any](capacity int) *Queue[T] {
	q := new(Queue[T])
	q.queueCore = newQueueCore[T](capacity, &q.ring, "NewQueue")
	return q
}

// Put adds v at the back of the queue, waiting while the queue is full, after
// the producers already waiting, until there is room or ctx is done.
//
// On failure it returns ctx.Err(), or ErrClosed if the queue is closed or
// closes while Put waits; the queue is left as it was. A ctx that is already
// done fails even when there is room. If room comes at the same moment that ctx
// ends, the item may be taken; Put then returns nil, never losing or
// duplicating it.
func (q *Queue[T]) Put(ctx context.Context, v T) error { return q.put(ctx, v) }

// TryPut adds v if there is room and no producer is waiting, and reports
// whether it did. It never waits. It fails on a closed queue.
func (q *Queue[T]) TryPut(v T) bool { return q.tryPut(v) }

// Get removes and returns the item at the front of the queue, waiting while
// the queue is empty, after the consumers already waiting, until an item comes
// or ctx is done.
//
// On failure it returns ctx.Err(), or ErrClosed once the queue is closed and
// empty. A ctx that is already done fails even when items wait. An item that
// reaches a consumer as its ctx ends is not lost: it goes to the next
// consumer, or back to the front of the queue.
func (q *Queue[T]) Get(ctx context.Context) (T, error) { return q.get(ctx) }

// TryGet removes and returns the item at the front of the queue if there is
// one. It never waits.
func (q *Queue[T]) TryGet() (T, bool) { return q.tryGet() }

// Len returns the number of items in the queue at the moment of the call.
func (q *Queue[T]) Len() int { return q.len() }

// Close closes the queue: Put and TryPut fail from now on, producers waiting
// are released with ErrClosed, and Get returns the items left, then ErrClosed.
// Closing a closed queue does nothing.
func (q *Queue[T]) Close() { q.close() }

// TaskDone tells the queue that an item taken with Get has been processed.
// When every item ever put is done, Join returns.
//
// TaskDone panics if called more times than items were put.
func (q *Queue[T]) TaskDone() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.done == q.accepted {
		panic("ctxsync: Queue.TaskDone called more times than items were put")
	}
	q.done++
	if q.done == q.accepted {
		for w := q.joiners.Front(); w != nil; w = q.joiners.Front() {
			q.joiners.Grant(&q.mu, w, struct{}{})
		}
	}
}

// Join waits until every item put in the queue has been marked done with
// TaskDone, or until ctx is done. It returns at once if nothing is
// unfinished.
//
// On failure it returns ctx.Err(); a ctx that is already done fails at once.
func (q *Queue[T]) Join(ctx context.Context) error {
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	q.mu.Lock()
	if q.done == q.accepted {
		q.mu.Unlock()
		return nil
	}
	w := q.joiners.Push(struct{}{})
	q.mu.Unlock()
	if _, ok := q.joiners.Wait(ctx, w); ok {
		return nil
	}
	q.mu.Lock()
	_, granted, _ := q.joiners.Cancel(w)
	q.mu.Unlock()
	if granted {
		return nil // everything finished as ctx ended
	}
	return ctx.Err()
}

// All returns an iterator over the items of the queue, which Gets them one by
// one, waiting as Get does, until the queue is closed and empty or ctx is
// done:
//
//	for job := range q.All(ctx) {
//		handle(job)
//		q.TaskDone()
//	}
//
// Breaking out of the loop stops the Gets; items not yet taken stay in the
// queue. The iterator does not call TaskDone. Use Get to tell closing from
// ctx ending.
func (q *Queue[T]) All(ctx context.Context) iter.Seq[T] {
	return func(yield func(T) bool) {
		for {
			v, err := q.Get(ctx)
			if err != nil || !yield(v) {
				return
			}
		}
	}
}

// ring is a growable circular buffer: the store of a Queue. Its length is 0
// or a power of two, so that a mask wraps an index around. It shrinks by half
// when a pop leaves it a quarter full, down to storeMinShrink, so that a
// burst does not pin its memory for the life of the queue.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (r *ring[T]) len() int { return r.size }

func (r *ring[T]) push(v T) {
	if r.size == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = v
	r.size++
}

func (r *ring[T]) unpop(v T) {
	if r.size == len(r.buf) {
		r.grow()
	}
	r.head = (r.head - 1) & (len(r.buf) - 1)
	r.buf[r.head] = v
	r.size++
}

func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero // drop the reference for the garbage collector
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
	if len(r.buf) > storeMinShrink && r.size <= len(r.buf)/4 {
		r.resize(len(r.buf) / 2)
	}
	return v
}

func (r *ring[T]) grow() { r.resize(max(8, 2*len(r.buf))) }

// resize moves the items to a new buffer of length n, a power of two.
func (r *ring[T]) resize(n int) {
	buf := make([]T, n)
	for i := range r.size {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}
