package ctxsync

import (
	"context"

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
// waited longest.
//
// In the terminology of the Go memory model, a call to Notify or NotifyAll is
// synchronized before the return of any Wait that it wakes; and since Wait
// returns holding the Lock, so is everything done under the Lock before the
// notification.
type Condition struct {
	_ nocopy.NoCopy

	l   *Lock // the Lock, if shared; own otherwise
	own Lock

	q waitq.Queue[struct{}] // waiters for a notification
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
// breaking that promise.
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
	w := c.q.PushDone(done, struct{}{})
	c.q.Unlock()
	c.unlockQueued(l, w)

	_, notified := c.q.Wait(done, w)
	var err error
	if !notified {
		c.q.Lock()
		if _, granted, _ := c.q.Cancel(w); granted {
			// Notified just before ctx ended, and ctx won the select:
			// pass it on, or the next waiter would sleep through a change
			// meant to wake someone.
			c.notifyLocked(1)
		}
		c.q.Unlock()
	}
	lockUncancelable(l)
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
func (c *Condition) unlockQueued(l *Lock, w *waitq.Waiter[struct{}]) {
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
// passes on a notification it may have taken.
func (c *Condition) withdraw(w *waitq.Waiter[struct{}]) {
	// Cancel may only settle a waiter whose Wait gave up: wait with a ctx
	// that is already done, which takes a grant already made, if any.
	ended := make(chan struct{})
	close(ended)
	_, granted := c.q.Wait(ended, w)
	c.q.Lock()
	if !granted {
		_, granted, _ = c.q.Cancel(w)
	}
	if granted {
		c.notifyLocked(1)
	}
	c.q.Unlock()
}

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
// Notify panics if n is negative.
func (c *Condition) Notify(n int) {
	if n < 0 {
		panic("ctxsync: Condition.Notify with negative count")
	}
	c.q.Lock()
	c.notifyLocked(n)
	c.q.Unlock()
}

// NotifyAll wakes every waiter.
func (c *Condition) NotifyAll() {
	c.q.Lock()
	c.notifyLocked(c.q.Len())
	c.q.Unlock()
}

// notifyLocked wakes the n oldest waiters. c.q must be locked.
func (c *Condition) notifyLocked(n int) {
	for ; n > 0; n-- {
		w := c.q.Front()
		if w == nil {
			return
		}
		c.q.Grant(w, struct{}{})
	}
}

// Waiting returns the number of goroutines waiting for a notification at the
// moment of the call.
func (c *Condition) Waiting() int {
	c.q.Lock()
	defer c.q.Unlock()
	return c.q.Len()
}
