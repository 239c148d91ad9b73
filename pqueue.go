package ctxsync

import (
	"context"
	"iter"

	"github.com/ctxsync/ctxsync/internal/nocopy"
)

// A PriorityQueue is a queue whose Get returns the item of lowest priority
// value first; items of equal priority come out in the order they were put.
// Its waits take a context, as Queue's do.
//
// A PriorityQueue has a capacity: Put waits while it holds that many items
// (backpressure), and TryPut fails. A capacity of 0 means unbounded. Get waits
// while it is empty. Producers and consumers that wait are served first in,
// first out: priority orders the items, not the goroutines. Memory follows the
// number of items held: it grows with a burst and is given back as the queue
// drains.
//
// Close stops new items: Put then fails with ErrClosed, while Get drains the
// items left, in priority order, then fails with ErrClosed too. CloseNow also
// takes out the items left and returns them. A PriorityQueue has Queue's task
// accounting: TaskDone, Join and Unfinished.
//
// Put and Get take O(log n) time for n items, and allocate nothing beyond the
// growth of the heap.
//
// The zero PriorityQueue is an empty, unbounded queue, ready to use. A
// PriorityQueue must not be copied after first use. A PriorityQueue is safe for concurrent
// use by multiple goroutines.
//
// In the terminology of the Go memory model, a Put is synchronized before the
// Get that returns its item, and a TaskDone (or a CloseNow) is synchronized
// before the return of any Join that it unblocks.
type PriorityQueue[T any] struct {
	_ nocopy.NoCopy

	// core is the whole queue. A named field rather than an embedded one, so
	// that the documentation shows no unexported field; the methods below
	// forward to it, and the compiler inlines each forward.
	core queueCore[T]
}

type pqItem[T any] struct {
	prio int
	seq  uint64 // set by the heap as the item enters it
	v    T
}

// NewPriorityQueue returns an empty PriorityQueue that holds at most capacity
// items, or any number if capacity is 0.
//
// NewPriorityQueue panics if capacity is negative.
func NewPriorityQueue[T any](capacity int) *PriorityQueue[T] {
	q := new(PriorityQueue[T])
	q.core = newQueueCore[T](capacity, "NewPriorityQueue")
	return q
}

// Put adds v with the given priority (lower comes out first), waiting while the
// queue is full, after the producers already waiting, until there is room or
// ctx is done.
//
// On failure it returns ctx.Err(), or ErrClosed if the queue is closed or
// closes while Put waits; the queue is left as it was. A ctx that is already
// done fails even when there is room. If room comes at the same moment that ctx
// ends, the item may be taken; Put then returns nil.
func (q *PriorityQueue[T]) Put(ctx context.Context, priority int, v T) error {
	return q.core.put(ctx, pqItem[T]{prio: priority, v: v})
}

// TryPut adds v with the given priority if there is room and no producer is
// waiting, and reports whether it did. It never waits. It fails on a closed
// queue.
func (q *PriorityQueue[T]) TryPut(priority int, v T) bool {
	return q.core.tryPut(pqItem[T]{prio: priority, v: v})
}

// Get removes and returns the item of lowest priority value, the oldest among
// equals, waiting while the queue is empty, after the consumers already
// waiting, until an item comes or ctx is done.
//
// On failure it returns ctx.Err(), or ErrClosed once the queue is closed and
// empty. A ctx that is already done fails even when items wait. An item is
// never handed to a consumer whose ctx has ended: it goes to the next one, or
// stays in the queue. An item handed over just before ctx ends is kept: Get
// returns it and a nil error.
func (q *PriorityQueue[T]) Get(ctx context.Context) (T, error) {
	it, err := q.core.get(ctx)
	return it.v, err
}

// TryGet removes and returns the item of lowest priority value if there is one.
// It never waits.
func (q *PriorityQueue[T]) TryGet() (T, bool) {
	it, ok := q.core.tryGet()
	return it.v, ok
}

// Len returns the number of items in the queue at the moment of the call.
func (q *PriorityQueue[T]) Len() int { return q.core.len() }

// Cap returns the queue's capacity: the most items it holds, or 0 if it is
// unbounded.
func (q *PriorityQueue[T]) Cap() int { return q.core.capacity }

// Getters returns the number of goroutines waiting in Get at the moment of
// the call: consumers starved of items. For metrics; it may be stale by the
// time the caller looks at it. A Get whose ctx has ended counts until it
// returns, or until a Put passes it over.
func (q *PriorityQueue[T]) Getters() int {
	g, _ := q.core.waiting()
	return g
}

// Putters returns the number of goroutines waiting in Put at the moment of
// the call: producers held back by a full queue. For metrics; it may be
// stale by the time the caller looks at it. A Put whose ctx has ended counts
// until it returns, or until a Get passes it over.
func (q *PriorityQueue[T]) Putters() int {
	_, p := q.core.waiting()
	return p
}

// Close closes the queue: Put and TryPut fail from now on, producers waiting
// are released with ErrClosed, and Get returns the items left, then ErrClosed.
// Closing a closed queue does nothing.
func (q *PriorityQueue[T]) Close() { q.core.close() }

// CloseNow closes the queue, as Close does, and takes out every item still in
// it, in the order Get would have returned them, so that nothing is dropped
// unseen: Get fails with ErrClosed at once from now on. The items it returns
// count as done, so Join returns once the items already taken by consumers
// are marked with TaskDone. See Queue.CloseNow for its place in a graceful
// shutdown.
func (q *PriorityQueue[T]) CloseNow() []T { return q.core.closeNow() }

// TaskDone tells the queue that an item taken with Get, TryGet or All has been
// processed. When every item put is done (or handed back by CloseNow), Join
// returns.
//
// TaskDone panics if called more times than items were taken.
func (q *PriorityQueue[T]) TaskDone() { q.core.taskDone("PriorityQueue.TaskDone") }

// Join waits until every item put in the queue has been marked done with
// TaskDone (or taken out by CloseNow), or until ctx is done. It returns at once
// if nothing is unfinished.
//
// On failure it returns ctx.Err(); a ctx that is already done fails at once.
func (q *PriorityQueue[T]) Join(ctx context.Context) error { return q.core.join(ctx) }

// Unfinished returns the number of items put and not yet done at the moment
// of the call: those in the queue, and those taken and not yet marked with
// TaskDone. It is never negative. Items handed back by CloseNow count as done.
func (q *PriorityQueue[T]) Unfinished() int { return q.core.unfinished() }

// All returns an iterator over the items of the queue, in priority order,
// which Gets them one by one, waiting as Get does, until the queue is closed
// and empty or ctx is done:
//
//	for job := range q.All(ctx) {
//		handle(job)
//		q.TaskDone()
//	}
//
// Every item All takes is yielded to the loop body, also one handed over
// just before ctx ends (as Get keeps it, All yields it, and never drops it):
// it counts as taken, and is owed a TaskDone, which the iterator does not
// call. Once ctx has ended, All takes no more items and the loop ends; the
// items not yet taken stay in the queue, for another consumer or for
// CloseNow. Breaking out of the loop likewise takes nothing more. Use Get to
// tell closing from ctx ending.
func (q *PriorityQueue[T]) All(ctx context.Context) iter.Seq[T] {
	return func(yield func(T) bool) {
		for {
			v, err := q.Get(ctx)
			if err != nil || !yield(v) {
				return
			}
		}
	}
}

// pheap is a binary min-heap on (priority, sequence): the store of a
// PriorityQueue. It is written out rather than built on container/heap, whose
// interface methods box every item into an allocation.
//
// It numbers items as they enter. Producers that wait are let in first in,
// first out, so among equal priorities items come out in the order of their
// Puts. An item handed straight to a waiting consumer never enters: the
// consumer keeps it (see Get), so no item ever comes back into the heap.
type pheap[T any] struct {
	items []pqItem[T]
	seq   uint64
}

func (h *pheap[T]) len() int { return len(h.items) }

func less[T any](a, b *pqItem[T]) bool {
	return a.prio < b.prio || (a.prio == b.prio && a.seq < b.seq)
}

func (h *pheap[T]) push(it pqItem[T]) {
	h.seq++
	it.seq = h.seq
	h.insert(it)
}

func (h *pheap[T]) insert(it pqItem[T]) {
	h.items = append(h.items, it)
	h.up(len(h.items) - 1)
}

func (h *pheap[T]) pop() pqItem[T] {
	n := len(h.items) - 1
	top, last := h.items[0], h.items[n]
	h.items[n] = pqItem[T]{} // drop the reference for the garbage collector
	h.items = h.items[:n]
	if n > 0 {
		h.refill(last)
	}
	if c := cap(h.items); c > storeMinShrink && n <= c/4 {
		// A quarter full: halve it, so that a burst does not pin its
		// memory for the life of the queue.
		h.items = append(make([]pqItem[T], 0, c/2), h.items...)
	}
	return top
}

// refill fills the hole that pop left at the root with it, the item that
// was last. It walks the hole down to a leaf, along the lesser child, and
// then lets it rise from there: the last item almost always belongs near the
// bottom, so this takes about half the comparisons of sifting it down from
// the root, which must look at both children at every level.
func (h *pheap[T]) refill(it pqItem[T]) {
	items := h.items
	n := len(items)
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && less(&items[c+1], &items[c]) {
			c++
		}
		items[i] = items[c]
		i = c
	}
	items[i] = it
	h.up(i)
}

// up lets the item at i rise to its place.
func (h *pheap[T]) up(i int) {
	items := h.items
	it := items[i]
	for i > 0 {
		parent := (i - 1) / 2
		if !less(&it, &items[parent]) {
			break
		}
		items[i] = items[parent]
		i = parent
	}
	items[i] = it
}
