// Package waitq is the FIFO waiter queue that every ctxsync primitive builds on.
//
// A primitive owns a Queue, whose lock also guards the primitive's own state. A
// goroutine that must wait appends a Waiter (Push, lock held), unlocks and
// blocks in Wait, which selects on the waiter's own channel and on ctx.Done().
// Whoever frees what the waiter asked for hands it over with Grant (lock held);
// the waiter is woken by the Unlock that ends that critical section, so that the
// send never lengthens it, and so that no exit can forget it. A waiter whose ctx
// ends locks again and calls Cancel, which tells it whether it was still queued
// (it is removed) or whether a grant beat the cancellation (the grant is
// consumed and the primitive passes it on). Either way nothing is lost.
//
// # Node reuse and synctest bubbles
//
// Waiters are recycled per Queue, never through a package-level pool. A channel
// made inside a testing/synctest bubble may only be used inside that bubble, and
// a bubbled goroutine blocked on a channel made outside it is not durably blocked
// (virtual time would stall). So a node, and its channel, is only reused while the
// Queue is busy: when nobody is queued and every granted waiter has finished with
// its node, the free list is dropped and the next waiter makes a fresh node in its
// own bubble (or outside any). Under steady contention the same nodes circulate
// and a wait allocates nothing.
package waitq

import (
	"context"
	"sync"

	"sync/atomic"
)

// A Waiter is one goroutine's place in a Queue.
type Waiter[T any] struct {
	next, prev *Waiter[T] // guarded by the queue's lock: links in the queue or the free list
	wake       *Waiter[T] // guarded by the queue's lock: link in the list of grants to send

	// ready receives one value per grant. It is buffered so that Grant never
	// blocks, whether or not the waiter has reached its select yet.
	ready chan struct{}

	queued bool // guarded by the queue's lock: in the queue, not yet granted or removed

	// idle is set by the waiting goroutine when it is done with the node, so that
	// the node (its channel drained, its value read) may be handed to another.
	idle atomic.Bool

	// Val is the primitive's payload: a weight, an item, a reader/writer flag.
	// It is written with the queue's lock held; the waiter reads it after its
	// grant, which the channel orders after the write.
	Val T
}

// Queued reports whether w is still in its queue: not granted and not removed.
// The queue's lock must be held.
func (w *Waiter[T]) Queued() bool { return w.queued }

// A Queue is a FIFO queue of waiters, with the lock that guards it and the
// state of the primitive that owns it. The zero value is an empty queue ready
// to use. Every method except Lock, Unlock and Wait requires the lock held.
type Queue[T any] struct {
	mu sync.Mutex

	head, tail *Waiter[T] // the waiters, oldest first
	len        int

	free, freeTail *Waiter[T] // nodes to reuse, oldest grant first

	wakes, wakesTail *Waiter[T] // granted, to be woken by Unlock

	// busy counts granted nodes whose goroutine has not finished with them yet.
	// It is decremented without the lock, by the waiting goroutine, so it sits
	// on a cache line of its own: sharing one with the lock and the owner's
	// state would make every wake-up steal that line from the goroutines
	// contending for them.
	_    [cacheLine]byte
	busy atomic.Int32
	_    [cacheLine - 4]byte
}

const cacheLine = 64

// Len returns the number of queued waiters.
func (q *Queue[T]) Len() int { return q.len }

// Front returns the oldest queued waiter, or nil.
func (q *Queue[T]) Front() *Waiter[T] { return q.head }

// Next returns the waiter queued after w, or nil.
func (q *Queue[T]) Next(w *Waiter[T]) *Waiter[T] { return w.next }

// Push appends a waiter carrying v at the back of the queue and returns it.
func (q *Queue[T]) Push(v T) *Waiter[T] {
	w := q.node()
	w.Val = v
	w.queued = true
	w.prev = q.tail
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
	q.len++
	return w
}

// PushFront puts a waiter carrying v at the front of the queue and returns it.
// A primitive uses it for a waiter that has already waited its turn, such as a
// Condition waiter that re-queues for its lock.
func (q *Queue[T]) PushFront(v T) *Waiter[T] {
	w := q.node()
	w.Val = v
	w.queued = true
	w.next = q.head
	if q.head == nil {
		q.tail = w
	} else {
		q.head.prev = w
	}
	q.head = w
	q.len++
	return w
}

// Grant removes w from the queue and sets its value to v: the waiter now owns
// whatever v stands for. It is woken by the Unlock that ends this critical
// section, after the lock is released, so that the send (and the scheduler work
// it triggers) does not lengthen the section.
func (q *Queue[T]) Grant(w *Waiter[T], v T) {
	if !w.queued {
		panic("ctxsync: bug: grant to a waiter that is not queued")
	}
	q.unlink(w)
	w.Val = v
	q.busy.Add(1)
	q.recycle(w)
	if q.wakesTail == nil {
		q.wakes = w
	} else {
		q.wakesTail.wake = w
	}
	q.wakesTail = w
}

// Lock locks the queue, and with it the state of the primitive that owns it.
func (q *Queue[T]) Lock() { q.mu.Lock() }

// Unlock unlocks the queue, then wakes the waiters granted while it was
// locked, oldest grant first.
func (q *Queue[T]) Unlock() {
	w := q.wakes
	q.wakes, q.wakesTail = nil, nil
	q.mu.Unlock()
	for w != nil {
		next := w.wake // read before the send: after it the node may be reused
		w.wake = nil
		w.ready <- struct{}{} // never blocks: the buffer is empty until this send
		w = next
	}
}

// Wait blocks until w is granted or ctx is done. The lock must NOT be held. On a grant it returns the granted value and true, and w is no longer the
// caller's to touch. When ctx ends first it returns false and the caller must
// lock the queue and call Cancel.
func (q *Queue[T]) Wait(ctx context.Context, w *Waiter[T]) (T, bool) {
	done := ctx.Done()
	if done == nil {
		// A ctx that can never end (Background, TODO, WithoutCancel): a plain
		// receive is cheaper than a select.
		<-w.ready
		return q.finish(w), true
	}
	select {
	case <-w.ready:
		return q.finish(w), true
	case <-done:
		var zero T
		return zero, false
	}
}

// Cancel settles a waiter whose ctx ended, after Wait returned false. If w was
// still queued it is removed and Cancel returns granted == false; front reports
// whether it was at the head of the queue, so the primitive can wake those behind
// it that may now proceed. If a grant won the race, Cancel consumes it and returns
// the granted value with granted == true: the primitive must then either keep the
// grant or pass it on, so that it is never lost.
func (q *Queue[T]) Cancel(w *Waiter[T]) (v T, granted, front bool) {
	if w.queued {
		front = q.head == w
		q.unlink(w)
		var zero T
		w.Val = zero
		w.idle.Store(true)
		q.recycle(w)
		return zero, false, front
	}
	// Granted: the granter sends as soon as it has unlocked, if it has not
	// already; this receive waits at most for that.
	<-w.ready
	return q.finish(w), true, false
}

// finish reads w's value and gives the node back for reuse.
func (q *Queue[T]) finish(w *Waiter[T]) T {
	v := w.Val
	var zero T
	w.Val = zero // drop references held by the payload
	w.idle.Store(true)
	q.busy.Add(-1)
	return v
}

func (q *Queue[T]) unlink(w *Waiter[T]) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.next, w.prev = nil, nil
	w.queued = false
	q.len--
}

// recycle appends w to the free list. Its goroutine may still be using it; node
// skips it until it is idle.
func (q *Queue[T]) recycle(w *Waiter[T]) {
	if q.freeTail == nil {
		q.free = w
	} else {
		q.freeTail.next = w
	}
	q.freeTail = w
}

// node returns a node to queue: a recycled idle one when the queue is busy, a new
// one otherwise.
func (q *Queue[T]) node() *Waiter[T] {
	if q.len == 0 && q.busy.Load() == 0 {
		// Quiet: every goroutine that waited here before has left. Drop the free
		// list, so that a channel made in one synctest bubble is never used by a
		// goroutine of another (see the package comment). It also returns the
		// memory of an idle primitive to the garbage collector.
		q.free, q.freeTail = nil, nil
		return newWaiter[T]()
	}
	// The oldest grant is the most likely to be finished. If it is not (its
	// goroutine has not run yet), rotate it to the back and try the next once,
	// so that one slow goroutine cannot make every later wait allocate.
	for range 2 {
		w := q.free
		if w == nil {
			break
		}
		q.free = w.next
		w.next = nil
		if q.free == nil {
			q.freeTail = nil
		}
		if w.idle.Load() {
			w.idle.Store(false)
			return w
		}
		q.recycle(w)
	}
	return newWaiter[T]()
}

func newWaiter[T any]() *Waiter[T] {
	return &Waiter[T]{ready: make(chan struct{}, 1)}
}
