package ctxsync

import (
	"context"
	"iter"
	"sync/atomic"

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
// in, first out. Producers and consumers take locks of their own, so that a Put
// and a Get run at the same time. Memory follows the number of items held: it
// grows with a burst and is given back as the queue drains.
//
// Close stops new items: Put then fails with ErrClosed, while Get drains the
// items left, then fails with ErrClosed too. CloseNow also takes out the items
// left and returns them, for a shutdown that must not wait for them.
//
// The zero Queue is an empty, unbounded queue, ready to use. A Queue must not
// be copied after first use. A Queue is safe for concurrent use by multiple goroutines.
//
// In the terminology of the Go memory model, a Put is synchronized before the
// Get that returns its item, and a TaskDone (or a CloseNow) is synchronized
// before the return of any Join that it unblocks.
type Queue[T any] struct {
	_ nocopy.NoCopy

	// Producers and consumers have a lock each, so that a Put and a Get run
	// at once, as they do on a channel. Items pass through the ring, whose
	// tail the producers' side moves and whose head the consumers' side
	// moves (see ring).
	//
	// A Get that finds the ring empty waits among the getters, and a Put
	// that finds it full among the putters. A side that moves its end of the
	// ring then serves the other side's waiters (settle), if it sees any. A
	// newcomer queues behind waiters of its kind even when the ring would let
	// it through: a serve is on its way. A waiter publishes itself (nGetters,
	// nPutters) before it looks at the ring once more, and the other side
	// moves its end before it looks for waiters, so one of the two always
	// sees the other.
	//
	// Lock order: putMu before takeMu before joinMu. The ring's buffer is
	// replaced only with putMu and takeMu held.

	// Read by both sides, and seldom written.
	capacity int64        // 0: unbounded; never changes
	closed   bool         // written with both locks held
	nPutters atomic.Int32 // putters.Len(), for the consumers (see countPuttersLocked)
	nGetters atomic.Int32 // getters.Len(), for the producers (see countGettersLocked)
	_        [64]byte     // each side on cache lines of its own

	putMu   waitq.Mutex              // guards putters and the ring's tail
	putters waitq.List[putResult[T]] // waiting for room; their value is their item
	_       [64]byte

	takeMu  waitq.Mutex              // guards getters and the ring's head
	getters waitq.List[getResult[T]] // waiting for an item
	_       [64]byte

	ring ring[T]

	// Task accounting. The items put are ring.tail; those taken by
	// consumers, ring.head less handedBack. CloseNow pops with joinMu held
	// too, so that under joinMu head and handedBack never disagree: a
	// TaskDone there cannot count an item CloseNow is handing back as
	// taken, and so done + handedBack never passes the items put.
	joinMu     waitq.Mutex          // guards the fields below
	done       uint64               // TaskDone calls; never more than the items taken
	handedBack uint64               // items taken out by CloseNow; they count as done
	joiners    waitq.List[struct{}] // Join calls waiting for done+handedBack == ring.tail
}

// NewQueue returns an empty Queue that holds at most capacity items, or any
// number if capacity is 0.
//
// NewQueue panics if capacity is negative.
func NewQueue[T any](capacity int) *Queue[T] {
	if capacity < 0 {
		panic("ctxsync: NewQueue with negative capacity")
	}
	return &Queue[T]{capacity: int64(capacity)}
}

// Put adds v at the back of the queue, waiting while the queue is full, after
// the producers already waiting, until there is room or ctx is done.
//
// On failure it returns ctx.Err(), or ErrClosed if the queue is closed or
// closes while Put waits; the queue is left as it was. A ctx that is already
// done fails even when there is room. If room comes at the same moment that ctx
// ends, the item may be taken; Put then returns nil, never losing or
// duplicating it.
func (q *Queue[T]) Put(ctx context.Context, v T) error {
	waitq.CheckCtx(ctx, "ctxsync")
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	q.putMu.Lock()
	// ctx is looked at once the room is seen, not before: room made after
	// ctx ended (by a Get that followed the cancel) must not let us in.
	room := q.putters.Len() == 0 && !q.full()
	if waitq.Ended(done) {
		q.putMu.Unlock()
		return waitq.DoneErr(ctx)
	}
	if q.closed {
		q.putMu.Unlock()
		return ErrClosed
	}
	if room {
		q.pushLocked(v)
		q.putMu.Unlock()
		q.settle(q.gettersWait(), false)
		return nil
	}
	w := q.putters.PushDone(done, putResult[T]{it: v})
	q.countPuttersLocked()
	filled := q.servePuttersLocked() // room came as we queued: a Get may have missed us
	q.putMu.Unlock()
	q.settle(filled, false)

	if r, ok := q.putters.Wait(done, w); ok {
		return r.err
	}
	q.putMu.Lock()
	r, granted, _ := q.putters.Cancel(w)
	q.countPuttersLocked()
	q.putMu.Unlock()
	if granted {
		// The item was accepted (or the queue closed) as ctx ended. An
		// accepted item may already be in a consumer's hands: keep the put.
		return r.err
	}
	return waitq.DoneErr(ctx)
}

// TryPut adds v if there is room and no producer is waiting, and reports
// whether it did. It never waits. It fails on a closed queue.
func (q *Queue[T]) TryPut(v T) bool {
	q.putMu.Lock()
	if q.closed || q.putters.Len() > 0 || q.full() {
		q.putMu.Unlock()
		return false
	}
	q.pushLocked(v)
	q.putMu.Unlock()
	q.settle(q.gettersWait(), false)
	return true
}

// Get removes and returns the item at the front of the queue, waiting while
// the queue is empty, after the consumers already waiting, until an item comes
// or ctx is done.
//
// On failure it returns ctx.Err(), or ErrClosed once the queue is closed and
// empty. A ctx that is already done fails even when items wait. An item is
// never handed to a consumer whose ctx has ended: it goes to the next one, or
// stays in the queue. An item handed over just before ctx ends is kept: Get
// returns it and a nil error.
func (q *Queue[T]) Get(ctx context.Context) (T, error) {
	var zero T
	waitq.CheckCtx(ctx, "ctxsync")
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	q.takeMu.Lock()
	// ctx is looked at once the item is seen, not before: an item put after
	// ctx ended is not ours. (The item's arrival orders the cancel before
	// this read.)
	item := q.getters.Len() == 0 && q.ring.hasItem()
	if waitq.Ended(done) {
		q.takeMu.Unlock()
		return zero, waitq.DoneErr(ctx)
	}
	if item {
		v := q.popLocked()
		q.takeMu.Unlock()
		q.settle(false, q.puttersWait())
		return v, nil
	}
	if q.closed && !q.ring.hasItem() {
		q.takeMu.Unlock()
		return zero, ErrClosed
	}
	w := q.getters.PushDone(done, getResult[T]{})
	q.countGettersLocked()
	madeRoom := q.serveGettersLocked() // an item came as we queued: a Put may have missed us
	q.takeMu.Unlock()
	q.settle(false, madeRoom)

	if r, ok := q.getters.Wait(done, w); ok {
		return r.it, r.err
	}
	q.takeMu.Lock()
	r, granted, _ := q.getters.Cancel(w)
	q.countGettersLocked()
	q.takeMu.Unlock()
	if granted {
		// The item (or ErrClosed) came before ctx ended, or it would not
		// have come (see waitq.List.Front): keep it. Handing it back would
		// reorder the queue, and a Get that found the queue closed and empty
		// in between would have seen an item reappear after it.
		return r.it, r.err
	}
	return zero, waitq.DoneErr(ctx)
}

// TryGet removes and returns the item at the front of the queue if there is
// one. It never waits.
func (q *Queue[T]) TryGet() (T, bool) {
	q.takeMu.Lock()
	if q.getters.Len() > 0 || !q.ring.hasItem() {
		q.takeMu.Unlock()
		var zero T
		return zero, false
	}
	v := q.popLocked()
	q.takeMu.Unlock()
	q.settle(false, q.puttersWait())
	return v, true
}

// Len returns the number of items in the queue at the moment of the call.
func (q *Queue[T]) Len() int { return int(q.ring.len()) }

// Cap returns the queue's capacity: the most items it holds, or 0 if it is
// unbounded.
func (q *Queue[T]) Cap() int { return int(q.capacity) }

// Getters returns the number of goroutines waiting in Get at the moment of
// the call: consumers starved of items. For metrics; it may be stale by the
// time the caller looks at it. A Get whose ctx has ended counts until it
// returns, or until a Put passes it over.
func (q *Queue[T]) Getters() int { return int(q.nGetters.Load()) }

// Putters returns the number of goroutines waiting in Put at the moment of
// the call: producers held back by a full queue. For metrics; it may be
// stale by the time the caller looks at it. A Put whose ctx has ended counts
// until it returns, or until a Get passes it over.
func (q *Queue[T]) Putters() int { return int(q.nPutters.Load()) }

// Close closes the queue: Put and TryPut fail from now on, producers waiting
// are released with ErrClosed, and Get returns the items left, then ErrClosed.
// Closing a closed queue does nothing.
func (q *Queue[T]) Close() {
	q.putMu.Lock()
	q.takeMu.Lock()
	if !q.closed {
		q.closed = true
		q.releasePuttersLocked()
		// Consumers waiting get the items on their way to them, if any, and
		// then there is nothing left for them.
		q.serveGettersLocked()
		q.releaseGettersLocked()
	}
	q.takeMu.Unlock()
	q.putMu.Unlock()
}

// CloseNow closes the queue, as Close does, and takes out every item still in
// it, oldest first, so that nothing is dropped unseen: Get fails with ErrClosed
// at once from now on. The items it returns count as done, so Join returns
// once the items already taken by consumers are marked with TaskDone. On a
// closed queue it takes out what Get has not drained yet.
//
// CloseNow is the last step of a graceful shutdown. Workers that range over
// q.All(ctx) stop when ctx ends, and may leave items queued: Join would wait
// for them for ever. After the workers have stopped, CloseNow hands those
// items back, to be saved or retried elsewhere, and Join then waits only for
// the items the workers took:
//
//	stop() // the workers' ctx ends; they finish the item in hand
//	workers.Wait()
//	for _, job := range q.CloseNow() {
//		saveForLater(job)
//	}
//	err := q.Join(shutdownCtx) // returns: every item is done or handed back
//
// CloseNow may also come right after stop, without waiting for the workers:
// no item is handed to a Get whose ctx has ended, so each item is then either
// in a worker's hands, to be marked done, or in the queue, and CloseNow
// returns it. Join with a deadline then bounds the whole shutdown.
func (q *Queue[T]) CloseNow() []T {
	q.putMu.Lock()
	q.takeMu.Lock()
	if !q.closed {
		q.closed = true
		q.releasePuttersLocked()
	}
	var items []T
	if q.ring.hasItem() {
		// Pop and count as one step under joinMu (see joinMu): a TaskDone
		// that saw the pops without the count would take one of these
		// items for one a consumer holds, and each would be done twice.
		q.joinMu.Lock()
		for q.ring.hasItem() {
			items = append(items, q.popLocked())
		}
		q.handedBack += uint64(len(items))
		q.releaseJoinersLocked()
		q.joinMu.Unlock()
	}
	// popLocked shrinks the ring only when it can take putMu, which we
	// hold here, and which Puts may have held at every pop before: without
	// this, the burst's buffer would stay pinned for the life of the closed
	// queue, whether or not items were left in it.
	q.ring.fit()
	q.releaseGettersLocked()
	q.takeMu.Unlock()
	q.putMu.Unlock()
	return items
}

// releasePuttersLocked releases every waiting producer with ErrClosed. Both
// locks must be held.
func (q *Queue[T]) releasePuttersLocked() {
	for w := q.putters.Front(); w != nil; w = q.putters.Front() {
		q.putters.Grant(&q.putMu, w, putResult[T]{err: ErrClosed})
	}
	q.countPuttersLocked()
}

// releaseGettersLocked releases every waiting consumer with ErrClosed; the
// queue is closed and empty. Both locks must be held.
func (q *Queue[T]) releaseGettersLocked() {
	for w := q.getters.Front(); w != nil; w = q.getters.Front() {
		q.getters.Grant(&q.takeMu, w, getResult[T]{err: ErrClosed})
	}
	q.countGettersLocked()
}

// countGettersLocked publishes the number of getters queued, after the list
// changed: a push, a grant, a cancel, or a Front that dropped waiters whose
// ctx had ended. Counted by hand (one less at each grant), the gauge missed
// those drops: it counted a waiter out of the line until its goroutine ran
// again, and Getters said a consumer waited beside an item queued.
// It stores only a change: the word shares a cache line that both sides
// read. q.takeMu must be held.
func (q *Queue[T]) countGettersLocked() { storeIfChanged(&q.nGetters, q.getters.Len()) }

// countPuttersLocked is countGettersLocked for the putters. q.putMu must be
// held.
func (q *Queue[T]) countPuttersLocked() { storeIfChanged(&q.nPutters, q.putters.Len()) }

func storeIfChanged(c *atomic.Int32, n int) {
	if c.Load() != int32(n) {
		c.Store(int32(n))
	}
}

// gettersWait reports whether getters wait, to be served after a push.
func (q *Queue[T]) gettersWait() bool { return q.nGetters.Load() > 0 }

// puttersWait reports whether putters wait, to be served after a pop.
func (q *Queue[T]) puttersWait() bool { return q.nPutters.Load() > 0 }

// full reports whether a new item must wait. q.putMu must be held.
func (q *Queue[T]) full() bool { return q.capacity > 0 && q.ring.holdsAtLeast(q.capacity) }

// pushLocked adds v at the back of the ring. q.putMu must be held.
func (q *Queue[T]) pushLocked(v T) {
	if q.ring.full() {
		q.takeMu.Lock()
		q.ring.grow()
		q.takeMu.Unlock()
	}
	q.ring.push(v)
}

// popLocked removes the item at the front of the ring, which is there (see
// ring.hasItem), and returns it. q.takeMu must be held.
func (q *Queue[T]) popLocked() T {
	v, c := q.ring.pop()
	if q.ring.shrinkable(c) && q.putMu.TryLock() {
		// Both locks, in the wrong order: TryLock cannot deadlock.
		q.ring.shrink()
		q.putMu.Unlock()
	}
	return v
}

// settle serves the getters if an item came into an empty ring, and the
// putters if room came in a full one, and so on while a serve calls for the
// other: with capacity 1, letting a putter in fills an empty ring. No lock
// may be held.
func (q *Queue[T]) settle(getters, putters bool) {
	for getters || putters {
		if getters {
			getters = false
			q.takeMu.Lock()
			putters = q.serveGettersLocked() || putters
			q.takeMu.Unlock()
		}
		if putters {
			putters = false
			q.putMu.Lock()
			getters = q.servePuttersLocked() || getters
			q.putMu.Unlock()
		}
	}
}

// serveGettersLocked hands items to the waiting getters, oldest first, while
// there are items, and reports whether putters wait for the room that made.
// q.takeMu must be held.
func (q *Queue[T]) serveGettersLocked() (madeRoom bool) {
	served := false
	// See the item before looking for a getter: Front drops getters whose
	// ctx has ended, and must see the end of a ctx that came before the
	// item did. (Len first: with nobody queued, the ring's producer side,
	// likely in another processor's cache, is not read.)
	for q.getters.Len() > 0 && q.ring.hasItem() {
		w := q.getters.Front()
		if w == nil {
			break
		}
		q.getters.Grant(&q.takeMu, w, getResult[T]{it: q.popLocked()})
		served = true
	}
	q.countGettersLocked()
	return served && q.puttersWait()
}

// servePuttersLocked lets the waiting putters in, oldest first, while there is
// room, and reports whether getters wait for the items that added. q.putMu
// must be held.
func (q *Queue[T]) servePuttersLocked() (filled bool) {
	served := false
	// See the room before looking for a putter, as serveGettersLocked sees
	// the item first.
	for q.putters.Len() > 0 && !q.full() {
		w := q.putters.Front()
		if w == nil {
			break
		}
		q.pushLocked(w.Val.it)
		q.putters.Grant(&q.putMu, w, putResult[T]{})
		served = true
	}
	q.countPuttersLocked()
	return served && q.gettersWait()
}

// TaskDone tells the queue that an item taken with Get, TryGet or All has
// been processed. When every item put is done (or handed back by CloseNow),
// Join returns.
//
// TaskDone panics if called more times than items were taken: a TaskDone for
// an item still in the queue would count it done twice once CloseNow hands it
// back, and Join would never see the count come right.
func (q *Queue[T]) TaskDone() {
	q.joinMu.Lock()
	defer q.joinMu.Unlock()
	if q.done == q.ring.head.Load()-q.handedBack {
		panic("ctxsync: Queue.TaskDone called more times than items were taken")
	}
	q.done++
	q.releaseJoinersLocked()
}

// releaseJoinersLocked releases the Joins if every item put is done.
// q.joinMu must be held.
func (q *Queue[T]) releaseJoinersLocked() {
	if q.done+q.handedBack == q.ring.tail.Load() {
		for w := q.joiners.Front(); w != nil; w = q.joiners.Front() {
			q.joiners.Grant(&q.joinMu, w, struct{}{})
		}
	}
}

// Unfinished returns the number of items put and not yet done at the moment
// of the call: those in the queue, and those taken and not yet marked with
// TaskDone. It is never negative. Items handed back by CloseNow count as done.
func (q *Queue[T]) Unfinished() int {
	q.joinMu.Lock()
	defer q.joinMu.Unlock()
	// done+handedBack is at most head when they were last counted, and
	// tail never falls behind head.
	return int(q.ring.tail.Load() - q.done - q.handedBack)
}

// Join waits until every item put in the queue has been marked done with
// TaskDone (or handed back by CloseNow), or until ctx is done. It returns at
// once if nothing is unfinished.
//
// On failure it returns ctx.Err(); a ctx that is already done fails at once.
func (q *Queue[T]) Join(ctx context.Context) error {
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	q.joinMu.Lock()
	if q.done+q.handedBack == q.ring.tail.Load() {
		q.joinMu.Unlock()
		// A TaskDone that followed the end of ctx does not count for us.
		return ctx.Err()
	}
	w := q.joiners.PushDone(done, struct{}{})
	q.joinMu.Unlock()
	if _, ok := q.joiners.Wait(done, w); ok {
		return nil
	}
	q.joinMu.Lock()
	_, granted, _ := q.joiners.Cancel(w)
	q.joinMu.Unlock()
	if granted {
		return nil // everything finished as ctx ended
	}
	return waitq.DoneErr(ctx)
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
// Every item All takes is yielded to the loop body, also one handed over
// just before ctx ends (as Get keeps it, All yields it, and never drops it):
// it counts as taken, and is owed a TaskDone, which the iterator does not
// call. Once ctx has ended, All takes no more items and the loop ends; the
// items not yet taken stay in the queue, for another consumer or for
// CloseNow. Breaking out of the loop likewise takes nothing more. Use Get to
// tell closing from ctx ending.
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
