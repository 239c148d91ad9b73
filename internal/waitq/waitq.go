// Package waitq is the FIFO waiter queue that every ctxsync primitive builds on.
//
// A primitive owns a Queue: a Mutex, which also guards the primitive's own
// state, and a List of waiters. A goroutine that must wait appends a Waiter
// (Push, locked), unlocks and blocks in Wait, which selects on the waiter's own
// channel and on ctx.Done(). Whoever frees what the waiter asked for hands it
// over with Grant (locked). A waiter that has not blocked yet (it is still
// yielding, see Wait) is told by a flag, which it reads between yields. One
// that blocked is woken by a send from the Unlock that ends the critical
// section: the send never lengthens it, and since Mutex.Unlock is the only way
// to unlock, no exit can forget it. A waiter whose ctx ends locks again and
// calls Cancel, which tells it whether it was still queued (it is removed) or
// whether a grant beat the cancellation (the grant is consumed and the
// primitive passes it on). Either way nothing is lost. A waiter queued with
// PushDone is never granted anything once its ctx has ended: Front and Next,
// which every grant goes through, drop it instead (see Front), so that what is
// freed after a caller cancelled goes to the next waiter. Before it queues for
// a lock or a permit, a goroutine pauses once and looks again (see Pause).
//
// A primitive with two kinds of waiters, such as a bounded queue's getters
// and putters, keeps a second List under the same Mutex.
//
// A caller's ctx is the caller's code, and no internal lock is held while the
// caller's code runs: its Err or Done may panic, or call back into the
// primitive. So a primitive reads ctx.Done() before it locks the Mutex, tests
// the channel under it (PushDone, Ended), and calls ctx.Err() after it unlocks.
//
// # Node reuse and synctest bubbles
//
// Waiters are recycled per List, never through a package-level pool. A channel
// made inside a testing/synctest bubble may only be used inside that bubble, and
// a bubbled goroutine blocked on a channel made outside it is not durably blocked
// (virtual time would stall). So a node, and its channel, is only reused while
// the List is busy: when nobody is queued and every granted waiter has finished
// with its node, the free nodes are dropped and the next waiter makes a fresh node
// in its own bubble (or outside any). Under steady contention the same nodes
// circulate and a wait allocates nothing.
package waitq

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A Mutex is the lock of a primitive. Unlock wakes the blocked waiters granted
// while it was held, after releasing it.
type Mutex struct {
	mu               sync.Mutex
	wakes, wakesTail *wakeLink // granted, to be woken by Unlock
}

// Lock locks m, and with it the state of the primitive that owns it.
func (m *Mutex) Lock() { m.mu.Lock() }

// TryLock locks m if it is unlocked, and reports whether it did.
func (m *Mutex) TryLock() bool { return m.mu.TryLock() }

// Unlock unlocks m, then wakes the blocked waiters granted while it was
// locked, oldest grant first.
func (m *Mutex) Unlock() {
	w := m.wakes
	m.wakes, m.wakesTail = nil, nil
	m.mu.Unlock()
	for w != nil {
		next := w.next // read before the send: after it the node may be reused
		w.next = nil
		w.ready <- struct{}{} // never blocks: the buffer is empty until this send
		w = next
	}
}

// wakeLink is the part of a Waiter that Mutex needs, whatever the Waiter's
// type parameter.
type wakeLink struct {
	next *wakeLink // guarded by the Mutex: the next grant to send

	// state is where the node is (see the wake constants). Grant sets it to
	// granted, which a waiter that has not blocked reads and needs no more;
	// only a waiter that marked itself blocked is sent a value on ready. The
	// waiting goroutine sets it back to free when it is done with the node.
	state atomic.Uint32

	// ready receives the grant of a waiter that blocks: one value, sent by the
	// Unlock that follows the grant. It is buffered so that the send never
	// blocks, whether or not the waiter has reached its select yet.
	ready chan struct{}
}

// The states of a wakeLink.
const (
	wakeFree    uint32 = iota // queued, neither granted nor blocked; or no longer in use
	wakeGranted               // granted, and its goroutine not done with it
	wakeBlocked               // queued; the waiter blocks on ready, or is about to
)

// A Waiter is one goroutine's place in a List.
type Waiter[T any] struct {
	next, prev *Waiter[T] // guarded by the Mutex: links in the list
	wake       wakeLink

	// done is the waiter's ctx.Done(), set by PushDone: nil if the ctx never
	// ends, or for a waiter pushed with Push. Front and Next drop a waiter
	// whose done is closed instead of returning it (see Front).
	done <-chan struct{}

	queued  bool // guarded by the Mutex: in the list, not yet granted or removed
	dropped bool // guarded by the Mutex: taken out by Front or Next, its ctx having ended
	alone   bool // set by Push for its caller's Wait: the list was empty before it

	// Val is the primitive's payload: a weight, an item, a reader/writer flag.
	// It is written with the Mutex held; the waiter reads it after its grant,
	// which the state word (or, for a blocked waiter, the channel) orders
	// after the write.
	Val T
}

// Queued reports whether w is still in its list: not granted and not removed.
// The Mutex must be held.
func (w *Waiter[T]) Queued() bool { return w.queued }

// A List is a FIFO list of waiters, guarded by the Mutex of the primitive that
// owns it. The zero value is an empty list ready to use. Every method except
// Wait requires the Mutex to be held.
type List[T any] struct {
	head, tail *Waiter[T] // the waiters, oldest first
	len        int

	// free holds the nodes granted or removed since the list was last quiet,
	// oldest first, for reuse: a ring of pointers, so that recycling a node
	// touches neither it nor its neighbours (they were last written by other
	// goroutines, likely on other processors, and the lock is held).
	free            []*Waiter[T] // len is a power of two, or 0
	freeHead, nfree int
}

// A Queue is a Mutex with one List: the common case. The zero value is an
// unlocked, empty queue ready to use.
type Queue[T any] struct {
	Mutex
	List[T]
}

// Grant removes w from the queue, sets its value to v and has the next Unlock
// wake it.
func (q *Queue[T]) Grant(w *Waiter[T], v T) { q.List.Grant(&q.Mutex, w, v) }

// Len returns the number of queued waiters.
func (l *List[T]) Len() int { return l.len }

// Front returns the oldest queued waiter whose ctx has not ended, or nil.
//
// Waiters ahead of it whose ctx has ended are dropped from the list on the
// way: whoever calls Front is about to grant, and a waiter whose ctx ended
// before the grant must never have it (a permit freed after the caller had
// cancelled would otherwise make its Acquire succeed). A dropped waiter's
// goroutine finds its ctx done when it wakes, and its Cancel reports it
// dropped; it is no longer counted by Len. Those behind it are the caller's
// to serve, as it goes on granting.
func (l *List[T]) Front() *Waiter[T] {
	for w := l.head; w != nil; w = l.head {
		if !w.ended() {
			return w
		}
		l.drop(w)
	}
	return nil
}

// Next returns the waiter queued after w whose ctx has not ended, or nil,
// dropping those in between whose ctx has ended, as Front does.
func (l *List[T]) Next(w *Waiter[T]) *Waiter[T] {
	for n := w.next; n != nil; n = w.next {
		if !n.ended() {
			return n
		}
		l.drop(n)
	}
	return nil
}

// ended reports whether the ctx of w has ended. It reads the channel without
// blocking: a closed channel is seen with one atomic load, an open one too.
func (w *Waiter[T]) ended() bool { return Ended(w.done) }

// drop takes w, whose ctx has ended, out of the list. Its goroutine still owns
// the node: Cancel recycles it.
func (l *List[T]) drop(w *Waiter[T]) {
	l.unlink(w)
	w.dropped = true
}

// Push appends a waiter carrying v at the back of the list and returns it.
func (l *List[T]) Push(v T) *Waiter[T] {
	w := l.node()
	w.Val = v
	w.queued = true
	w.alone = l.len == 0
	w.prev = l.tail
	if l.tail == nil {
		l.head = w
	} else {
		l.tail.next = w
	}
	l.tail = w
	l.len++
	return w
}

// PushDone is Push for a waiter that waits under a ctx whose Done channel is
// done: once done is closed, Front and Next drop the waiter rather than return
// it, so that it is never granted anything. The Mutex must be held.
//
// It takes the channel, not the ctx, because a ctx is the caller's code: its
// Done method may be anything (it may panic, or call back into the primitive),
// so the caller reads ctx.Done() before it locks the Mutex, never under it.
// See Ended.
func (l *List[T]) PushDone(done <-chan struct{}, v T) *Waiter[T] {
	w := l.Push(v)
	w.done = done
	return w
}

// PushFrontDone is PushDone at the front of the list, for a waiter that was
// served and must wait again in the place it had: a pool's Acquire handed a
// resource whose owed check then failed. Pushed at the back, it would be
// overtaken by every waiter that queued while it was away. The Mutex must be
// held.
func (l *List[T]) PushFrontDone(done <-chan struct{}, v T) *Waiter[T] {
	w := l.node()
	w.Val = v
	w.done = done
	w.queued = true
	w.alone = l.len == 0
	w.next = l.head
	if l.head == nil {
		l.tail = w
	} else {
		l.head.prev = w
	}
	l.head = w
	l.len++
	return w
}

// Ended reports whether done, a ctx's Done channel read before the Mutex was
// locked, is closed. A primitive that must look at its caller's ctx with the
// Mutex held (to refuse a grant to a caller whose ctx has ended) calls Ended
// rather than ctx.Err(), which is the caller's code and must not run under an
// internal lock; it calls ctx.Err() for the error after unlocking. Ended costs
// an atomic load, and nothing for a nil channel (a ctx that never ends).
//
// A channel made in a testing/synctest bubble cannot be read outside it (the
// runtime ends the program), while the ctx's Err can be. So a path that need
// not wait and holds no lock when it looks at ctx (a fast path's look after
// its take) calls Err, protected by a deferred give-back, rather than read
// Done: a ctx made in a bubble, a Group's say, keeps working there after it.
func Ended(done <-chan struct{}) bool {
	if done == nil {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Grant removes w from the list and sets its value to v: the waiter now owns
// whatever v stands for. A waiter that has not blocked sees the grant at once.
// One that blocked is woken by the Unlock of m that ends this critical section,
// after the lock is released, so that the send (and the scheduler work it
// triggers) does not lengthen the section. m must be the Mutex that guards l,
// and held.
func (l *List[T]) Grant(m *Mutex, w *Waiter[T], v T) {
	if !w.queued {
		panic("ctxsync: bug: grant to a waiter that is not queued")
	}
	l.unlink(w)
	w.Val = v
	l.recycle(w)
	if w.wake.state.Swap(wakeGranted) != wakeBlocked {
		return // the waiter reads the flag: nothing to send
	}
	if m.wakesTail == nil {
		m.wakes = &w.wake
	} else {
		m.wakesTail.next = &w.wake
	}
	m.wakesTail = &w.wake
}

// Pause yields the processor once. A goroutine that finds what it wants taken
// (the lock, a permit) calls it before it queues, then looks again with a
// TryX, which never overtakes a queued waiter.
//
// When holds are short the holder is usually running or runnable, and the
// yield lets it release. Without the pause, queues that form under short holds
// never drain: each release hands over to the oldest waiter, which must be
// woken, and the releaser, back for more, must queue and park behind the
// others, so every hand-over costs a park and a wake-up (hundreds of
// nanoseconds) where a free permit costs tens. With it, a goroutine back for
// more yields instead of queueing, the queued waiters are served, and the
// queue empties. When holds are long, it costs one yield per wait.
func Pause() { runtime.Gosched() }

// Wait blocks until w is granted or done, the Done channel of the caller's
// ctx, is closed. The Mutex must NOT be held. On a grant it returns the
// granted value and true, and w is no longer the caller's to touch. When ctx
// ends first it returns false and the caller must lock the Mutex and call
// Cancel. It takes the channel, read before w was queued, rather than the
// ctx: a method of ctx that panicked here would leave w queued for good, to
// be granted what nobody would give back.
//
// A waiter that was alone in the list first yields its processor a few times,
// looking for its grant in between, before it parks: with one waiter, the
// goroutine that will grant is usually running or runnable, often on this very
// processor, and yielding lets it finish and hand over more cheaply than a
// park in a select and a wake-up would: the grant sets a flag in w, and
// neither side touches the channel. Behind other waiters the grant is a long
// way off, and yielding would only churn the run queues.
func (l *List[T]) Wait(done <-chan struct{}, w *Waiter[T]) (T, bool) {
	if w.alone {
		for range aloneYields {
			runtime.Gosched()
			if w.wake.state.Load() == wakeGranted {
				return l.finish(w), true
			}
		}
	}
	if !w.wake.state.CompareAndSwap(wakeFree, wakeBlocked) {
		return l.finish(w), true // granted before we could block
	}
	if done == nil {
		// A ctx that can never end (Background, TODO, WithoutCancel): a plain
		// receive is cheaper than a select.
		<-w.wake.ready
		return l.finish(w), true
	}
	select {
	case <-w.wake.ready:
		return l.finish(w), true
	case <-done:
		var zero T
		return zero, false
	}
}

// WaitHold is Wait for a caller that goes on after its grant in a way that
// belongs to the wait (a Condition's notified waiter, which must take its
// Lock again): on a grant it returns the value but keeps w in use, so that
// w is not reused and the list does not count as quiet (see node) until the
// caller calls Release(w). Otherwise a burst of waiters, all woken and all
// finished with their nodes before the first of them waits again, would make
// each new wait of the burst allocate a node.
func (l *List[T]) WaitHold(done <-chan struct{}, w *Waiter[T]) (T, bool) {
	if w.alone {
		for range aloneYields {
			runtime.Gosched()
			if w.wake.state.Load() == wakeGranted {
				return w.Val, true
			}
		}
	}
	if !w.wake.state.CompareAndSwap(wakeFree, wakeBlocked) {
		return w.Val, true // granted before we could block
	}
	if done == nil {
		<-w.wake.ready
		return w.Val, true
	}
	select {
	case <-w.wake.ready:
		return w.Val, true
	case <-done:
		var zero T
		return zero, false
	}
}

// Release gives back for reuse a node whose grant WaitHold returned. The
// Mutex must NOT be held (it need not be: as at the end of Wait, only the
// waiting goroutine touches the node).
func (l *List[T]) Release(w *Waiter[T]) { l.finish(w) }

// Cancel settles a waiter whose ctx ended, after Wait returned false. If w was
// still queued it is removed and Cancel returns granted == false; front reports
// whether it was at the head of the list, so the primitive can wake those behind
// it that may now proceed. If Front or Next dropped it already (see Front),
// Cancel returns granted == false and front == false: the caller that dropped it
// served those behind it. If a grant won the race, Cancel consumes it and returns
// the granted value with granted == true: the grant came before the ctx ended
// (Front would have dropped the waiter otherwise), and the primitive must either
// keep it or pass it on, so that it is never lost.
func (l *List[T]) Cancel(w *Waiter[T]) (v T, granted, front bool) {
	if w.queued || w.dropped {
		if w.queued {
			front = l.head == w
			l.unlink(w)
		}
		w.dropped = false
		var zero T
		w.Val = zero
		w.done = nil
		w.wake.state.Store(wakeFree)
		l.recycle(w)
		return zero, false, front
	}
	// Granted: Wait marked w blocked before it returned false, so the granter
	// sends as soon as it has unlocked, if it has not already; this receive
	// waits at most for that.
	<-w.wake.ready
	return l.finish(w), true, false
}

// finish reads w's value and gives the node back for reuse.
func (l *List[T]) finish(w *Waiter[T]) T {
	v := w.Val
	var zero T
	w.Val = zero // drop references held by the payload
	w.done = nil
	w.wake.state.Store(wakeFree)
	return v
}

func (l *List[T]) unlink(w *Waiter[T]) {
	if w.prev == nil {
		l.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		l.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.next, w.prev = nil, nil
	w.queued = false
	l.len--
}

// recycle appends w to the free ring. Its goroutine may still be using it;
// node skips it until it is idle.
func (l *List[T]) recycle(w *Waiter[T]) {
	if l.nfree == len(l.free) {
		l.growFree()
	}
	l.free[(l.freeHead+l.nfree)&(len(l.free)-1)] = w
	l.nfree++
}

func (l *List[T]) growFree() {
	free := make([]*Waiter[T], max(4, 2*len(l.free)))
	for i := range l.nfree {
		free[i] = l.free[(l.freeHead+i)&(len(l.free)-1)]
	}
	l.free, l.freeHead = free, 0
}

// popFree takes the oldest node off the free ring; l.nfree > 0.
func (l *List[T]) popFree() *Waiter[T] {
	w := l.free[l.freeHead]
	l.free[l.freeHead] = nil
	l.freeHead = (l.freeHead + 1) & (len(l.free) - 1)
	l.nfree--
	return w
}

// node returns a node to queue: a recycled idle one when the list is busy, a new
// one otherwise.
func (l *List[T]) node() *Waiter[T] {
	if l.len == 0 && l.quiet() {
		// Every goroutine that waited here before has left. Forget the free
		// nodes, so that a channel made in one synctest bubble is never used
		// by a goroutine of another (see the package comment). It also lets
		// the garbage collector have the nodes of an idle primitive.
		clear(l.free)
		l.freeHead, l.nfree = 0, 0
		return newWaiter[T]()
	}
	// The oldest grant is the most likely to be finished. If it is not (its
	// goroutine has not run yet), rotate it to the back and try the next once,
	// so that one slow goroutine cannot make every later wait allocate.
	for range min(2, l.nfree) {
		w := l.popFree()
		if w.wake.state.Load() == wakeFree {
			return w
		}
		l.recycle(w)
	}
	return newWaiter[T]()
}

// Forget drops the free nodes, as the next Push would once the list is quiet,
// for an owner that knows the list is quiet now and may not be used again for
// long: a primitive kept for reuse (a KeyedLock's entry) would otherwise keep
// its last waiters' nodes, and their channels, until its next waiter, though
// that waiter makes a fresh node anyway. The ring itself is kept. Nobody may
// be queued, and every granted waiter must have finished with its node.
func (l *List[T]) Forget() {
	if l.nfree == 0 {
		return
	}
	clear(l.free)
	l.freeHead, l.nfree = 0, 0
}

// quiet reports whether every node on the free ring is idle: no goroutine that
// was granted is still to receive its grant. With nobody queued either, no
// goroutine uses a node of this list. It looks at the newest grants first, as
// the likeliest to be unfinished.
func (l *List[T]) quiet() bool {
	for i := l.nfree - 1; i >= 0; i-- {
		if l.free[(l.freeHead+i)&(len(l.free)-1)].wake.state.Load() != wakeFree {
			return false
		}
	}
	return true
}

func newWaiter[T any]() *Waiter[T] {
	return &Waiter[T]{wake: wakeLink{ready: make(chan struct{}, 1)}}
}

// aloneYields is how many times a waiter alone in its list yields before it
// parks (see Wait).
const aloneYields = 2
