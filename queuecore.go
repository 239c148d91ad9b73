package ctxsync

import (
	"context"

	"github.com/ctxsync/ctxsync/internal/closed"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// ErrClosed is returned by the queues' Put once they are closed, by their
// Get once they are closed and drained, and by a Watch's Wait and Changes
// once it is closed.
var ErrClosed = closed.Queue

// A queue's store (PriorityQueue's heap, Queue's ring) shrinks when a pop
// leaves it a quarter full, but not below storeMinShrink items.
const storeMinShrink = 64

// queueCore is PriorityQueue's engine: a store, a capacity, and getters and
// putters that wait in FIFO order for items and for room, all under one lock.
// (Queue, whose order needs no heap, gives each side a lock of its own.)
//
// Getters wait only while the store is empty, and putters only while it is
// full, so the two never wait at once.
type queueCore[T any] struct {
	mu       waitq.Mutex // guards the fields below
	items    pheap[T]    // the items, in priority order
	capacity int         // 0: unbounded; never changes
	closed   bool
	accepted uint64                           // items ever accepted
	taken    uint64                           // items handed to consumers (Get, TryGet, All)
	done     uint64                           // TaskDone calls; never more than taken
	handed   uint64                           // items taken out by CloseNow; they count as done
	getters  waitq.List[getResult[pqItem[T]]] // waiting for an item
	putters  waitq.List[putResult[pqItem[T]]] // waiting for room; their value is their item
	joiners  waitq.List[struct{}]             // Join calls waiting for done+handed == accepted
}

type getResult[I any] struct {
	it  I
	err error
}

type putResult[I any] struct {
	it  I
	err error
}

func newQueueCore[T any](capacity int, fn string) queueCore[T] {
	if capacity < 0 {
		panic("ctxsync: " + fn + " with negative capacity")
	}
	return queueCore[T]{capacity: capacity}
}

// full reports whether a new item must wait. q.mu must be held.
func (q *queueCore[T]) full() bool {
	return q.putters.Len() > 0 || (q.capacity > 0 && q.items.len() >= q.capacity)
}

// put adds it, waiting for room if need be.
func (q *queueCore[T]) put(ctx context.Context, it pqItem[T]) error {
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	q.mu.Lock()
	// Look at ctx again under the lock: room made after ctx ended (by a Get
	// that followed the cancel) must not let us in.
	if waitq.Ended(done) {
		q.mu.Unlock()
		return waitq.DoneErr(ctx)
	}
	if ok, err := q.tryPutLocked(it); ok || err != nil {
		q.mu.Unlock()
		return err
	}
	w := q.putters.PushDone(done, putResult[pqItem[T]]{it: it})
	q.mu.Unlock()

	if r, ok := q.putters.Wait(done, w); ok {
		return r.err
	}
	q.mu.Lock()
	r, granted, _ := q.putters.Cancel(w)
	q.mu.Unlock()
	if granted {
		// The item was accepted (or the queue closed) as ctx ended. An
		// accepted item may already be in a consumer's hands: keep the put.
		return r.err
	}
	return waitq.DoneErr(ctx)
}

// tryPutLocked adds it if that needs no wait, and reports whether it did; it
// returns ErrClosed if the queue is closed. q.mu must be held.
func (q *queueCore[T]) tryPutLocked(it pqItem[T]) (bool, error) {
	if q.closed {
		return false, ErrClosed
	}
	if w := q.getters.Front(); w != nil {
		// A consumer waits, so the store is empty: hand it over directly.
		q.getters.Grant(&q.mu, w, getResult[pqItem[T]]{it: it})
		q.accepted++
		q.taken++ // the consumer keeps it, even if its ctx ends now (see get)
		return true, nil
	}
	if q.full() {
		return false, nil
	}
	q.items.push(it)
	q.accepted++
	return true, nil
}

func (q *queueCore[T]) tryPut(it pqItem[T]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	ok, _ := q.tryPutLocked(it)
	return ok
}

// get takes the next item, waiting for one if need be.
func (q *queueCore[T]) get(ctx context.Context) (pqItem[T], error) {
	var zero pqItem[T]
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return zero, err
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	q.mu.Lock()
	// Look at ctx again under the lock: an item put after ctx ended is not
	// ours.
	if waitq.Ended(done) {
		q.mu.Unlock()
		return zero, waitq.DoneErr(ctx)
	}
	if it, ok := q.tryGetLocked(); ok {
		q.mu.Unlock()
		return it, nil
	}
	if q.closed {
		q.mu.Unlock()
		return zero, ErrClosed
	}
	w := q.getters.PushDone(done, getResult[pqItem[T]]{})
	q.mu.Unlock()

	if r, ok := q.getters.Wait(done, w); ok {
		return r.it, r.err
	}
	q.mu.Lock()
	r, granted, _ := q.getters.Cancel(w)
	q.mu.Unlock()
	if granted {
		// The item (or ErrClosed) came before ctx ended, or it would not
		// have come (see waitq.List.Front): keep it. Handing it back would
		// reorder the queue, and a Get that found the queue closed and empty
		// in between would have seen an item reappear after it.
		return r.it, r.err
	}
	return zero, waitq.DoneErr(ctx)
}

// tryGetLocked takes the next item if there is one, and lets the oldest waiting
// producer in. q.mu must be held.
func (q *queueCore[T]) tryGetLocked() (pqItem[T], bool) {
	if q.items.len() == 0 {
		var zero pqItem[T]
		return zero, false
	}
	it := q.items.pop()
	q.taken++
	if w := q.putters.Front(); w != nil && (q.capacity == 0 || q.items.len() < q.capacity) {
		q.items.push(w.Val.it)
		q.accepted++
		q.putters.Grant(&q.mu, w, putResult[pqItem[T]]{})
	}
	return it, true
}

func (q *queueCore[T]) tryGet() (pqItem[T], bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.tryGetLocked()
}

func (q *queueCore[T]) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.items.len()
}

func (q *queueCore[T]) waiting() (getters, putters int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.getters.Len(), q.putters.Len()
}

func (q *queueCore[T]) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closeLocked()
}

// closeLocked closes the queue if it is open. q.mu must be held.
func (q *queueCore[T]) closeLocked() {
	if q.closed {
		return
	}
	q.closed = true
	for w := q.putters.Front(); w != nil; w = q.putters.Front() {
		q.putters.Grant(&q.mu, w, putResult[pqItem[T]]{err: ErrClosed})
	}
	// Consumers wait only while the store is empty: nothing is left for them.
	for w := q.getters.Front(); w != nil; w = q.getters.Front() {
		q.getters.Grant(&q.mu, w, getResult[pqItem[T]]{err: ErrClosed})
	}
}

// closeNow closes the queue and takes out every item left, in order; they
// count as done.
func (q *queueCore[T]) closeNow() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closeLocked()
	var items []T
	if n := q.items.len(); n > 0 {
		items = make([]T, 0, n)
		for q.items.len() > 0 {
			items = append(items, q.items.pop().v)
		}
		// Counted apart from taken: no TaskDone is owed for these.
		q.handed += uint64(n)
		q.releaseJoinersLocked()
	}
	return items
}

// taskDone counts one item done; fn names the caller for the panic.
func (q *queueCore[T]) taskDone(fn string) {
	q.mu.Lock()
	if q.done == q.taken {
		q.mu.Unlock()
		// Bounded by the items put instead, a TaskDone for an item still
		// queued would pass, and CloseNow would then count that item done
		// again: Unfinished below zero, Join waiting for ever.
		panic("ctxsync: " + fn + " called more times than items were taken")
	}
	q.done++
	q.releaseJoinersLocked()
	q.mu.Unlock()
}

// releaseJoinersLocked releases the Joins if every item accepted is done.
// q.mu must be held.
func (q *queueCore[T]) releaseJoinersLocked() {
	if q.done+q.handed == q.accepted {
		for w := q.joiners.Front(); w != nil; w = q.joiners.Front() {
			q.joiners.Grant(&q.mu, w, struct{}{})
		}
	}
}

// join waits until every item accepted is done, or ctx is done.
func (q *queueCore[T]) join(ctx context.Context) error {
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	q.mu.Lock()
	if q.done+q.handed == q.accepted {
		q.mu.Unlock()
		// A TaskDone that followed the end of ctx does not count for us.
		return ctx.Err()
	}
	w := q.joiners.PushDone(done, struct{}{})
	q.mu.Unlock()
	if _, ok := q.joiners.Wait(done, w); ok {
		return nil
	}
	q.mu.Lock()
	_, granted, _ := q.joiners.Cancel(w)
	q.mu.Unlock()
	if granted {
		return nil // everything was done before ctx ended
	}
	return waitq.DoneErr(ctx)
}

func (q *queueCore[T]) unfinished() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	// done <= taken, and taken+handed <= accepted: never negative.
	return int(q.accepted - q.done - q.handed)
}
