package ctxsync

import (
	"context"
	"sync/atomic"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

const (
	lockHeld    = 1 << iota // the Lock is held (or being handed to the head waiter)
	lockWaiters             // goroutines are queued; Unlock must take the slow path
	lockTake                // one take from free: the bits from here up count them
)

// A Lock is a mutual exclusion lock whose Lock method can be cancelled through
// its context. It is not reentrant: a goroutine that holds it and calls Lock
// again waits for itself.
//
// The zero value is an unlocked Lock, ready to use. A Lock must not be copied
// after first use. A Lock is safe for concurrent use by multiple goroutines.
//
// Waiters are served first in, first out: Unlock hands the lock straight to the
// oldest waiter, and neither Lock nor TryLock can take it while anyone is queued.
// That costs throughput under heavy contention (the next holder must be scheduled
// before the lock is used again) and buys the guarantee that no waiter starves.
//
// In the terminology of the Go memory model, the n'th call to Unlock is
// synchronized before the m'th successful call to Lock or TryLock for any n < m,
// as for sync.Mutex.
//
// A Lock is not tied to a goroutine: one goroutine may lock it and another
// unlock it.
type Lock struct {
	_ nocopy.NoCopy

	// state holds lockHeld and lockWaiters, and above them the number of
	// takes of a free lock, in units of lockTake. With the waiters bit clear
	// it is changed by CAS alone; with it set, only with q locked. The bit is
	// set exactly when q is not empty, so a newcomer's CAS from a free state
	// can never overtake a queued waiter: the lock is never free while one
	// waits.
	//
	// The count lets Lock look at ctx once. Lock loads the state, looks at
	// ctx, and takes a free lock by a CAS from the state it loaded. If the CAS
	// lands, nobody took the lock in between, since every take from free
	// moves the count on: the lock was free, unchanged, from before the look
	// until the take, so the take counts as made at the look, when ctx had
	// not ended. Without the count, a lock taken and freed again in between,
	// perhaps after ctx ended, would look the same as one never taken. (The
	// count has the 62 bits above the two flags: it turns negative after
	// 2⁶¹ moves, which changes nothing, since it is only ever compared for
	// equality, and comes back to a value it had after 2⁶², which no
	// goroutine sleeps through between its load and its CAS.)
	//
	// A hand-over to a waiter moves the count on too, so that each hold has
	// a state of its own: the state it starts with, less the waiters bit,
	// which stays until the hold ends. A goroutine that must give back a
	// hold it was handed, or took, as its ctx ended looks for that state: if
	// an Unlock by a goroutine that did not hold the Lock let the hold go
	// meanwhile, the state differs, and there is nothing to give back (see
	// giveBackLocked).
	state atomic.Int64

	// q holds the waiters; its lock also guards the slow paths. A waiter is
	// granted the state its hold starts with (see state).
	q waitq.Queue[int64]
}

// NewLock returns a new, unlocked Lock. It is the same as new(Lock).
func NewLock() *Lock { return new(Lock) }

// Lock locks l, waiting if needed until it is unlocked, after the goroutines
// already waiting, or until ctx is done.
//
// On failure it returns ctx.Err() and l is left as it was: a ctx that is
// already done fails even when l is free. If the lock is handed over at the
// same moment that ctx ends, Lock either returns nil holding it or passes it on
// to the next waiter and returns ctx.Err(); it is never lost.
func (l *Lock) Lock(ctx context.Context) error {
	// Look at ctx before the take, so that a done ctx changes nothing (not
	// even for a moment: a TryLock meanwhile must not fail). The state is
	// loaded before the look and the take is a CAS from it: if the CAS lands,
	// the lock was free from before the look until the take (see state), not
	// freed after ctx ended, and one look is enough.
	if ctx == nil {
		waitq.PanicNilCtx("ctxsync")
	}
	s := l.state.Load()
	if err := ctx.Err(); err != nil {
		return err
	}
	if s&(lockHeld|lockWaiters) == 0 && l.state.CompareAndSwap(s, s+lockTake+lockHeld) {
		return nil
	}
	return l.lockSlow(ctx)
}

func (l *Lock) lockSlow(ctx context.Context) error {
	return l.lockSlowGone(ctx, nil)
}

// lockSlowGone is lockSlow, and if gone is not nil, sets *gone when the
// caller had the lock, taken or handed over, and found it let go by an Unlock
// of another goroutine's when it came to give it back (see giveBackLocked):
// a KeyedLock must then drop no reference for it, as that Unlock dropped one.
// *gone is set before the look at ctx that may panic, so that it tells a
// caller that recovers, or defers, too.
func (l *Lock) lockSlowGone(ctx context.Context, gone *bool) error {
	if waitq.Pause(); true {
		if took, ok := l.tryTake(); ok {
			return l.keep(ctx, took, gone)
		}
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	l.q.Lock()
	w, took := l.queueTakeLocked(done)
	l.q.Unlock()
	if w == nil {
		return l.keep(ctx, took, gone) // it was free
	}

	if _, ok := l.q.Wait(done, w); ok {
		return nil // Unlock handed the lock to us.
	}
	if l.leave(w) && gone != nil {
		*gone = true
	}
	return waitq.DoneErr(ctx)
}

// tryTake is TryLock, and if it took l, the state its take left: the state
// of its hold (see state).
func (l *Lock) tryTake() (int64, bool) {
	s := l.state.Load()
	if s&(lockHeld|lockWaiters) == 0 && l.state.CompareAndSwap(s, s+lockTake+lockHeld) {
		return s + lockTake + lockHeld, true
	}
	return 0, false
}

// queueLocked takes l if it is free, or else queues a waiter behind those
// already waiting, under a ctx whose Done channel is done (nil for one that
// never ends). It returns the waiter, or nil if it took l. l.q must be locked.
//
// A Condition calls it too, for the places it queues for notified waiters
// (see Condition.settleLocked), which then wait on them with l.q.Wait.
func (l *Lock) queueLocked(done <-chan struct{}) *waitq.Waiter[int64] {
	w, _ := l.queueTakeLocked(done)
	return w
}

// queueTakeLocked is queueLocked, and if it took l, the state its take left:
// what giveBackLocked looks for to tell that take still holds l.
func (l *Lock) queueTakeLocked(done <-chan struct{}) (*waitq.Waiter[int64], int64) {
	for {
		s := l.state.Load()
		if s&(lockHeld|lockWaiters) == 0 {
			// Free and, since the waiters bit is clear, nobody is queued.
			if took := s + lockTake + lockHeld; l.state.CompareAndSwap(s, took) {
				return nil, took
			}
			continue
		}
		// Set the waiters bit before queueing so that a concurrent fast Unlock
		// fails its CAS and comes to the queue for us.
		if s&lockWaiters != 0 || l.state.CompareAndSwap(s, s|lockWaiters) {
			return l.q.PushDone(done, 0), 0
		}
	}
}

// leave takes w out of the queue after its wait gave up (l.q.Wait returned
// false), and hands the lock on if it was handed to w meanwhile, so that the
// goroutine that gave up holds nothing. It reports whether the lock was handed
// to w and let go by another goroutine's Unlock before w could give it back.
func (l *Lock) leave(w *waitq.Waiter[int64]) (gone bool) {
	l.q.Lock()
	if hold, granted, _ := l.q.Cancel(w); granted {
		// The lock was handed to us as ctx ended. Hand it on, so that the
		// caller, told of the error, holds nothing; unless an Unlock by a
		// goroutine that did not hold it let it go already.
		gone = !l.giveBackLocked(hold)
	} else if l.q.Len() == 0 {
		// We were the last waiter: drop the bit. The lock is held by someone
		// else (it is never free while a waiter is queued), unless an Unlock
		// dropped us from the queue for our ended ctx and freed it: then the
		// bit is gone already, and the state is left alone.
		if s := l.state.Load(); s&lockWaiters != 0 {
			l.state.Store(s &^ lockWaiters)
		}
	}
	l.q.Unlock()
	return gone
}

// keep settles a lock that lockSlow took by itself, after the caller's ctx was
// first checked: if ctx has ended since, the lock may have been freed after
// the ctx ended, and a caller whose ctx ended must not get it. It is handed
// on, and keep returns ctx.Err(), and sets *gone, if gone is not nil, if the
// lock was let go by another goroutine's Unlock before it could (see
// lockSlowGone). took is the state the take left (see giveBackLocked).
//
// The look is the caller's code, and may panic: the lock is then handed on
// too (by the deferred call), so that the panic leaves nobody holding it.
func (l *Lock) keep(ctx context.Context, took int64, gone *bool) (err error) {
	kept := false
	defer func() {
		if !kept && !l.giveBack(took) && gone != nil {
			*gone = true
		}
	}()
	if err = ctx.Err(); err == nil {
		kept = true
	}
	return err
}

// TryLock locks l if it is free and nobody is waiting for it, and reports
// whether it did. It never waits.
func (l *Lock) TryLock() bool {
	s := l.state.Load()
	return s&(lockHeld|lockWaiters) == 0 && l.state.CompareAndSwap(s, s+lockTake+lockHeld)
}

// Unlock unlocks l. If goroutines are waiting, the oldest one now holds it.
//
// Unlock panics if l is not locked. An Unlock by a goroutine that does not
// hold l, made while another does, cannot be told from the holder's: it
// unlocks l, or hands it on, and the misuse shows later, as an Unlock that
// finds l unlocked and panics. A Lock that gives back, as its ctx ends, the
// lock it was handed or took gives back that hold only: if such an Unlock
// let it go meanwhile, Lock returns ctx.Err() and leaves l as it is.
func (l *Lock) Unlock() {
	// The CAS expects the lock held with nobody queued, as the state last
	// read should show: if it shows otherwise, the CAS fails (unless the
	// state has just become what it expects) and the slow path sorts it out.
	if s := l.state.Load()&^lockWaiters | lockHeld; !l.state.CompareAndSwap(s, s-lockHeld) {
		l.unlockSlow()
	}
}

func (l *Lock) unlockSlow() {
	l.q.Lock()
	l.unlockLocked()
	l.q.Unlock()
}

// unlockOrFalse is Unlock for a KeyedLock, which panics with its own message:
// where Unlock would panic, it changes nothing and returns false.
func (l *Lock) unlockOrFalse() bool {
	if s := l.state.Load()&^lockWaiters | lockHeld; l.state.CompareAndSwap(s, s-lockHeld) {
		return true
	}
	l.q.Lock()
	ok := l.handOnLocked()
	l.q.Unlock()
	return ok
}

// unlockLocked unlocks l or hands it to the oldest waiter. l.q must be locked.
//
// With q locked, the waiters bit does not change. Set, it keeps every fast
// path off (each expects it clear), so with l held nothing else changes the
// state, which is changed by Store, keeping the count of takes. Clear, a fast
// path may change it meanwhile (an Unlock by a goroutine that does not hold
// l, racing this one), so it is changed by CAS: of two Unlocks of one hold,
// one frees it and the other panics, and the count of takes never goes back.
func (l *Lock) unlockLocked() {
	if !l.handOnLocked() {
		l.q.Unlock()
		panic("ctxsync: Unlock of unlocked Lock")
	}
}

// handOnLocked is unlockLocked, but where that panics, it changes nothing
// and returns false. l.q must be locked.
func (l *Lock) handOnLocked() bool {
	s := l.state.Load()
	for s&(lockHeld|lockWaiters) == lockHeld {
		if l.state.CompareAndSwap(s, s&^lockHeld) {
			return true
		}
		s = l.state.Load()
	}
	if s&lockHeld == 0 {
		return false
	}
	w := l.q.Front()
	if w == nil {
		// The waiters bit was set when the fast path looked, and the waiter
		// has since given up.
		l.state.Store(s &^ (lockHeld | lockWaiters))
		return true
	}
	// A hold of its own for the waiter (see state): the count moves on.
	s += lockTake
	if l.q.Len() == 1 {
		s &^= lockWaiters // the last waiter gets it: clear the bit, keep it held
	}
	l.state.Store(s)
	l.q.Grant(w, s&^lockWaiters)
	return true
}

// Locked reports whether l is locked at the moment of the call. The answer may
// be stale by the time the caller looks at it; use it for metrics and tests,
// not for synchronization.
func (l *Lock) Locked() bool {
	return l.state.Load()&lockHeld != 0
}

// Waiting returns the number of goroutines queued for l at the moment of the
// call: those waiting in Lock (a Condition's Lock included), and the waiters of
// Conditions on l that were notified, or whose ctx ended, and wait to take l
// again in Wait. Condition.Waiting counts those still waiting for a
// notification, so that between them each goroutine blocked in Wait counts
// once. A notified waiter counts from when its place in l's order is queued,
// which happens when it, or a waiter notified after it, finds l taken (see
// Condition); not while it is on its way to take a free l.
//
// For metrics; it may be stale by the time the caller looks at it.
func (l *Lock) Waiting() int {
	l.q.Lock()
	defer l.q.Unlock()
	return l.q.Len()
}

// waitPlace waits until a place that a Condition queued with queueLocked is
// handed the lock. p is nil or &relockHeld if the lock was taken for it.
func (l *Lock) waitPlace(p *waitq.Waiter[int64]) {
	if p == nil || p == &relockHeld {
		return
	}
	l.q.Wait(nil, p) // a nil Done channel: until Unlock hands it over
}

// giveUp gives back, unused, a place that a Condition queued for a notified
// waiter that will not wait for it. It never waits.
func (l *Lock) giveUp(p *waitq.Waiter[int64]) {
	if p == nil || p == &relockHeld {
		l.Unlock()
		return
	}
	// leave may only settle a waiter whose wait gave up: wait with a Done
	// channel already closed, which takes a hand-over already made, if any.
	if hold, ok := l.q.Wait(closedChan, p); ok {
		l.giveBack(hold)
		return
	}
	l.leave(p)
}

// dropPlace takes out of the queue a place that a Condition queued for a
// notified waiter that has since taken the lock by itself, and holds it (see
// Condition.tookTurn).
func (l *Lock) dropPlace(p *waitq.Waiter[int64]) {
	if p == &relockHeld {
		// The lock was taken for the waiter, then let go by an Unlock of a
		// goroutine that did not hold it, and the waiter's TryLock took it
		// again: it holds it once. relockHeld is never queued; waiting on
		// it would block for good.
		return
	}
	l.q.Lock()
	if p.Queued() {
		l.dropPlaceLocked(p)
		l.q.Unlock()
		return
	}
	l.q.Unlock()
	// Handed the lock: only an Unlock by a goroutine that did not hold it
	// (it was the waiter's) can have let it go. The place holds it now,
	// for the same waiter; finish with the node.
	l.q.Wait(nil, p)
}

// giveBack gives back the hold of l whose state is hold (see state): one that
// lockSlow took or was handed, for a caller that will not keep it. It never
// waits for l, only for its queue's lock. It reports whether it gave it back,
// as giveBackLocked does.
func (l *Lock) giveBack(hold int64) bool {
	// Nobody queued: free it as the fast Unlock would.
	if l.state.CompareAndSwap(hold, hold&^lockHeld) {
		return true
	}
	l.q.Lock()
	ok := l.giveBackLocked(hold)
	l.q.Unlock()
	return ok
}

// giveBackLocked frees l, or hands it to the oldest waiter, if the hold whose
// state is hold (see state) still holds it, and does nothing otherwise. l.q
// must be locked.
//
// Callers: a goroutine that took l, or was handed it, as its ctx ended, and
// gives it back (see leave and keep); and a Condition's settleLocked, which
// took l free for a notified waiter that turned out to have taken it by
// itself meanwhile.
//
// The hold is gone if an Unlock by a goroutine that did not hold l let it go
// (made while l was held, such an Unlock cannot be told from the holder's):
// l is then free, or held by another hold, taken or handed over since, with
// a state of its own. That hold is not this one to give back: unlockLocked
// would let it go from under its holder, or panic, with an Unlock of unlocked
// Lock, in a goroutine that did nothing wrong (in a Condition, with its lock
// held, so that every later call of the Condition would hang). The misuse
// shows, if at all, where the goroutine that holds l by then unlocks it.
//
// It reports whether it gave the hold back: false if it was gone.
func (l *Lock) giveBackLocked(hold int64) bool {
	s := l.state.Load()
	if s&lockWaiters == 0 {
		// A fast path may change the state meanwhile: CAS.
		return l.state.CompareAndSwap(hold, hold&^lockHeld)
	}
	// The waiters bit keeps the fast paths off: the state is stable.
	if s&^lockWaiters != hold {
		return false
	}
	l.unlockLocked()
	return true
}

// dropPlaceLocked takes p, a place still queued, out of the queue. l.q must be
// locked, and l held: it is never free while a waiter is queued.
func (l *Lock) dropPlaceLocked(p *waitq.Waiter[int64]) {
	l.q.Cancel(p)
	if l.q.Len() == 0 {
		// As in leave: with l held and q locked, only Store changes it.
		if s := l.state.Load(); s&lockWaiters != 0 {
			l.state.Store(s &^ lockWaiters)
		}
	}
}
