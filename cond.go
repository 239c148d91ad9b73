package ctxsync

import (
	"context"
	"sync/atomic"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A Condition is a Lock with a queue of goroutines waiting for the state it
// guards to change: sync.Cond, with waits that take a context.
//
// A goroutine locks the Condition, checks the state, and calls Wait while the
// state is not what it needs; Wait unlocks, waits for a Notify, and locks
// again. WaitFor does the loop. A goroutine that changes the state calls
// Notify or NotifyAll.
//
// Use NewCondition, or the zero Condition, which has a Lock of its own. A
// Condition must not be copied after first use. A Condition is safe for
// concurrent use by multiple goroutines.
//
// Waiters are notified first in, first out: Notify(n) wakes the n that have
// waited longest. The waiters notified take the Lock again in the order they
// were notified, whether by one call or by several: a waiter notified earlier
// never takes it after one notified later, so that one which keeps finding the
// state not to its liking (in WaitFor, say) cannot be overtaken again and
// again by waiters that came after it. They queue for the Lock once the first
// of them to run finds it taken, not at the notification: a Lock call made in
// between may take the Lock before them. Several Conditions that share a Lock
// each keep the order among their own waiters.
//
// In the terminology of the Go memory model, a call to Notify or NotifyAll is
// synchronized before the return of any Wait that it wakes; and since Wait
// returns holding the Lock, so is everything done under the Lock before the
// notification.
type Condition struct {
	_ nocopy.NoCopy

	l   *Lock // the Lock, if shared; own otherwise
	own Lock

	// The waiters for a notification. Notify grants each waiter it wakes a
	// ticket: the notifications, numbered in order.
	q waitq.Queue[uint64]

	// The order in which notified waiters take the Lock again. Tickets below
	// turn have their place in the Lock's order settled: they took it, or a
	// place was queued for them on it. A notified waiter whose ticket is
	// turn may take a free Lock; one whose ticket is above it, or which
	// finds the Lock taken, queues places for itself and for every ticket
	// from turn up, in order, and the waiters of those tickets wait on them
	// when they run (see relock). If each waiter queued for itself once its
	// goroutine ran, the order would be the scheduler's (the one readied
	// last usually runs first), and a waiter could lose the Lock to younger
	// ones every time. If Notify queued them all itself, every wake-up would
	// cost a hand-over of the Lock and a new waiter node even when nobody
	// contends for it.
	//
	// turn moves on by one ticket at a time, with q locked, save for the
	// waiter whose ticket it is, which takes a free Lock and moves it on
	// by CAS without locking q (see relock).
	tickets uint64        // guarded by q's Mutex: the ticket the next notified waiter gets
	turn    atomic.Uint64 // the oldest ticket whose place is not settled
	places  relockPlaces  // guarded by q's Mutex: places queued for tickets below turn, until taken
}

// NewCondition returns a Condition on l. Several Conditions may share one Lock,
// to wait for different changes to the same state (a queue's "not empty" and
// "not full", say). If l is nil the Condition makes its own Lock.
func NewCondition(l *Lock) *Condition {
	return &Condition{l: l}
}

// lock returns the Lock of c.
func (c *Condition) lock() *Lock {
	if c.l != nil {
		return c.l
	}
	return &c.own
}

// Lock locks the Condition's Lock, as Lock.Lock does.
func (c *Condition) Lock(ctx context.Context) error { return c.lock().Lock(ctx) }

// TryLock locks the Condition's Lock if it is free and nobody is waiting for
// it, and reports whether it did.
func (c *Condition) TryLock() bool { return c.lock().TryLock() }

// Unlock unlocks the Condition's Lock. It panics if the Lock is not locked.
func (c *Condition) Unlock() { c.lock().Unlock() }

// Locked reports whether the Condition's Lock is locked, as Lock.Locked does.
func (c *Condition) Locked() bool { return c.lock().Locked() }

// Wait unlocks the Condition's Lock, waits until a Notify or NotifyAll wakes it
// or ctx is done, and locks the Lock again before it returns. It always returns
// holding the Lock, whatever it returns, so that a deferred Unlock stays
// right; the re-lock does not give up when ctx ends, since it cannot without
// breaking that promise. A Wait that was notified takes the Lock again after
// those notified before it (see Condition), even if its ctx ends meanwhile.
//
// The caller must hold the Lock. Wait panics if the Lock is not locked, but it
// cannot tell who locked it: a Lock is not tied to a goroutine (one may lock
// it and another unlock it), and Go gives no cheap way to know which goroutine
// is running. So, as with sync.Cond, it is the caller's responsibility to
// hold the Lock. If a goroutine that does not hold it calls Wait while another
// does, Wait unlocks the Lock from under that other goroutine.
//
// As with sync.Cond, the state may have changed again by the time Wait
// returns: call it in a loop, or use WaitFor.
//
// On failure it returns ctx.Err(); a ctx that is already done fails at once,
// without unlocking. A waiter whose ctx has ended is never notified: Notify
// passes over it to the next one. A notification that reaches a waiter as its
// ctx ends is not lost: Wait either returns nil, having taken it, or passes it
// to the next waiter and returns ctx.Err().
func (c *Condition) Wait(ctx context.Context) error {
	l := c.lock()
	if !l.Locked() {
		panic("ctxsync: Condition.Wait without holding its Lock")
	}
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	// Queue before unlocking: a Notify that follows our Unlock must find us.
	// Queued with ctx, so that Notify passes over us once ctx has ended and
	// wakes a waiter that can use the change. Its Done channel is read
	// before the lock: the caller's code (see waitq.Ended).
	done := ctx.Done()
	c.q.Lock()
	w := c.q.PushDone(done, 0)
	c.q.Unlock()
	c.unlockQueued(l, w)

	// The node is held until the Lock is ours again (see waitq.WaitHold):
	// the waiters that one NotifyAll wakes come back to wait in the order
	// of the relock, one at a time, and a node given back at the wake-up
	// would let the queue go quiet in between and drop its spare nodes.
	ticket, notified := c.q.WaitHold(done, w)
	ticketed := notified
	var err error
	if !notified {
		c.q.Lock()
		if ticket, ticketed, _ = c.q.Cancel(w); ticketed {
			// Notified just before ctx ended, and ctx won the select:
			// pass it on, or the next waiter would sleep through a change
			// meant to wake someone. The ticket is kept: a waiter notified
			// later may have queued a place on the Lock for it already.
			c.notifyLocked(1)
		}
		c.q.Unlock()
	}
	if ticketed {
		c.relock(l, ticket)
	} else {
		lockUncancelable(l)
	}
	if notified {
		c.q.Release(w)
	}
	if !notified {
		// Read once the Lock is held again: ctx is the caller's code, and
		// a caller whose ctx.Err panics must still hold the Lock, as after
		// every return of Wait.
		err = waitq.DoneErr(ctx)
	}
	return err
}

// unlockQueued unlocks l for a Wait queued as w. If Unlock panics, the Lock
// was unlocked since Wait looked, by another goroutine: Wait was called
// without holding it. Then w leaves the queue before the panic goes on, so
// that it cannot take a notification meant for a goroutine that waits.
func (c *Condition) unlockQueued(l *Lock, w *waitq.Waiter[uint64]) {
	unlocked := false
	defer func() {
		if !unlocked {
			c.withdraw(w)
		}
	}()
	l.Unlock()
	unlocked = true
}

// withdraw takes w, queued by a Wait that will not wait, out of the queue, and
// passes on a notification it may have taken, and gives up the place on the
// Lock that came with it.
func (c *Condition) withdraw(w *waitq.Waiter[uint64]) {
	// Cancel may only settle a waiter whose Wait gave up: wait with a ctx
	// that is already done, which takes a grant already made, if any.
	ticket, granted := c.q.Wait(closedChan, w)
	c.q.Lock()
	if !granted {
		ticket, granted, _ = c.q.Cancel(w)
	}
	if !granted {
		c.q.Unlock()
		return
	}
	c.notifyLocked(1)
	// The ticket's place: taken for it by a waiter notified later, or
	// settled now, so that the tickets after it are not held up. Giving it
	// up never waits: this goroutine is panicking.
	l := c.lock()
	var p *waitq.Waiter[int64]
	if ticket < c.turn.Load() {
		p = c.places.take(ticket)
	} else {
		p = c.settleLocked(l, ticket)
	}
	c.q.Unlock()
	l.giveUp(p)
}

// relock takes the Lock again for a Wait notified with ticket t, after the
// waiters notified before it (see turn).
func (c *Condition) relock(l *Lock, t uint64) {
	// The fast path, without q's lock: the waiter notified with a free Lock
	// and nobody before it to wait for, most often the only one.
	if c.turn.Load() == t && l.TryLock() {
		c.tookTurn(l, t)
		return
	}
	for yields := 0; ; yields++ {
		c.q.Lock()
		turn := c.turn.Load()
		if t < turn {
			// A waiter notified after us found the Lock taken, and queued
			// our place on it before its own.
			p := c.places.take(t)
			c.q.Unlock()
			l.waitPlace(p)
			return
		}
		if t == turn && l.TryLock() {
			c.turn.Store(t + 1) // with q locked, nobody else moves it on from ours
			c.q.Unlock()
			return
		}
		// As Lock does before it queues, yield once: the holder, or the
		// waiters notified before us, are likely to be running or
		// runnable, and may take and release the Lock without a queue, in
		// which every waiter costs a hand-over. Behind other tickets,
		// yield again, up to a bound, for them to come back and take
		// their turns: queueing places for them all would cost each a
		// hand-over, and a node of the Lock's queue (a new one, if the
		// queue was idle). Only a waiter held up beyond that, by an
		// older one that does not run or a Lock held long, queues them.
		if yields > 0 && (t == turn || yields >= relockYields) {
			p := c.settleLocked(l, t)
			c.q.Unlock()
			l.waitPlace(p)
			return
		}
		c.q.Unlock()

		waitq.Pause()
	}
}

// relockYields bounds the yields of a notified waiter behind older ones (see
// relock). Measured on ConditionBroadcast (16 waiters, 2 processors): fewer,
// or queueing places as soon as the older ones seem not to move on, cost
// hand-overs and made it slower.
const relockYields = 16

// tookTurn moves turn on from t, whose waiter took a free Lock without q's
// lock. If a waiter notified after it queued a place for it in between (its
// TryLock and this CAS), that place, queued behind its hold, is taken out.
func (c *Condition) tookTurn(l *Lock, t uint64) {
	if c.turn.CompareAndSwap(t, t+1) {
		return
	}
	c.q.Lock()
	p := c.places.take(t)
	c.q.Unlock()
	l.dropPlace(p)
}

// settleLocked queues places on l, in order, for the notified waiters whose
// tickets run from turn to t, and returns t's: nil if it took l, which was
// free, for t. The others are kept in places. c.q must be locked; l's queue is
// locked after it, so that the places are in the order of the tickets.
//
// The waiter whose ticket is turn may take a free Lock meanwhile without q's
// lock, and move turn on by CAS (see relock): so each place is queued before
// turn moves on past its ticket, by CAS too, and one whose CAS fails is taken
// out again.
func (c *Condition) settleLocked(l *Lock, t uint64) *waitq.Waiter[int64] {
	l.q.Lock()
	for {
		k := c.turn.Load()
		if k > t {
			l.q.Unlock()
			panic("ctxsync: bug: a notified waiter's turn passed while it was not settled")
		}
		p, took := l.queueTakeLocked(nil) // a nil Done channel: the re-lock never gives up
		if settleHook != nil {
			settleHook(k)
		}
		if k == t {
			c.turn.Store(t + 1) // nobody else moves it on from ours
			l.q.Unlock()
			return p
		}
		if c.turn.CompareAndSwap(k, k+1) {
			if p == nil {
				p = &relockHeld
			}
			c.places.put(k, p)
			continue
		}
		// k's waiter took the Lock by itself since we looked.
		if p == nil {
			l.giveBackLocked(took)
		} else {
			l.dropPlaceLocked(p)
		}
	}
}

// settleHook, if set, runs in settleLocked between the take or place for
// ticket k and the CAS that moves turn on from k: a test's way into that
// window, which a waiter's fast path can enter at any time. It is nil except
// in the package's own tests.
var settleHook func(k uint64)

// lockUncancelable locks l, waiting as long as it takes.
func lockUncancelable(l *Lock) {
	if l.TryLock() {
		return
	}
	if err := l.lockSlow(context.Background()); err != nil {
		panic("ctxsync: bug: Lock with a context that never ends failed: " + err.Error())
	}
}

// WaitFor waits until pred returns true, calling Wait while it does not. pred
// runs with the Lock held, in the caller's goroutine, and may call Notify and
// NotifyAll. WaitFor returns holding the Lock, as Wait does.
//
// If pred panics, the panic goes on in the caller, which holds the Lock then
// as it would on return, and is no longer waiting for a notification: a
// deferred Unlock stays right, and the Condition is whole.
//
// The caller must hold the Lock, as for Wait; WaitFor panics if the Lock is
// not locked, or if pred is nil. On failure it returns ctx.Err(); a ctx that
// is already done fails at once, without calling pred.
func (c *Condition) WaitFor(ctx context.Context, pred func() bool) error {
	if pred == nil {
		panic("ctxsync: Condition.WaitFor with nil predicate")
	}
	if !c.lock().Locked() {
		panic("ctxsync: Condition.WaitFor without holding its Lock")
	}
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	for !pred() {
		if err := c.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Notify wakes at most n waiters, the ones that have waited longest among
// those whose ctx has not ended. It does nothing if n is 0 or nobody waits; an
// n larger than the number of waiters (math.MaxInt, say) wakes them all, as
// NotifyAll does. The caller may, but need not, hold the Lock; holding it is
// what makes the change it announces visible in full.
//
// The waiters it wakes take the Lock again in the order they waited, after
// those that earlier calls woke (see Condition).
//
// Notify panics if n is negative.
func (c *Condition) Notify(n int) {
	if n < 0 {
		panic("ctxsync: Condition.Notify with negative count")
	}
	c.q.Lock()
	c.notifyLocked(n)
	c.q.Unlock()
}

// NotifyAll wakes every waiter, as Notify does.
func (c *Condition) NotifyAll() {
	c.q.Lock()
	c.notifyLocked(c.q.Len())
	c.q.Unlock()
}

// notifyLocked wakes the n oldest waiters, each with its ticket. c.q must be
// locked.
func (c *Condition) notifyLocked(n int) {
	for ; n > 0; n-- {
		w := c.q.Front()
		if w == nil {
			return
		}
		c.q.Grant(w, c.tickets)
		c.tickets++
	}
}

// Waiting returns the number of goroutines waiting for a notification at the
// moment of the call. A waiter that was notified, or whose ctx ended, and
// waits to take the Lock again counts in the Lock's Waiting instead.
func (c *Condition) Waiting() int {
	c.q.Lock()
	defer c.q.Unlock()
	return c.q.Len()
}

// relockHeld stands in relockPlaces for a place that settleLocked did not
// queue, having found the Lock free and taken it for the ticket's waiter. It
// is never queued.
var relockHeld waitq.Waiter[int64]

// relockPlaces holds the places that notified waiters queued on the Lock for
// the waiters notified before them, by ticket, until those take them. Its
// tickets are put in increasing order and taken in any.
type relockPlaces struct {
	slots []*waitq.Waiter[int64] // by ticket modulo len, a power of two (or 0)
	low   uint64                 // the oldest ticket held, if any
	n     int                    // places held
}

// put holds the place p for ticket t, above every ticket held.
func (r *relockPlaces) put(t uint64, p *waitq.Waiter[int64]) {
	if r.n == 0 {
		r.low = t
	}
	if t-r.low >= uint64(len(r.slots)) {
		r.grow(t)
	}
	r.slots[t&uint64(len(r.slots)-1)] = p
	r.n++
}

// grow makes room for the tickets from low to t.
func (r *relockPlaces) grow(t uint64) {
	size := max(8, len(r.slots))
	for uint64(size) <= t-r.low {
		size *= 2
	}
	slots := make([]*waitq.Waiter[int64], size)
	if r.n > 0 {
		for k := r.low; k < t; k++ {
			slots[k&uint64(size-1)] = r.slots[k&uint64(len(r.slots)-1)]
		}
	}
	r.slots = slots
}

// take returns the place held for ticket t, and forgets it.
func (r *relockPlaces) take(t uint64) *waitq.Waiter[int64] {
	mask := uint64(len(r.slots) - 1)
	p := r.slots[t&mask]
	if p == nil || t < r.low {
		panic("ctxsync: bug: no place on the Lock for a notified waiter")
	}
	r.slots[t&mask] = nil
	if r.n--; r.n == 0 {
		if len(r.slots) > relockKeep {
			// Not kept after a NotifyAll of thousands of waiters.
			r.slots = nil
		}
		return p
	}
	for r.slots[r.low&mask] == nil {
		r.low++ // the slot of low is held whenever a place is
	}
	return p
}

// relockKeep is the most slots relockPlaces keeps when it holds no place.
const relockKeep = 256
