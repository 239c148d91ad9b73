package ratelimit

import (
	"context"
	"time"

	"github.com/ctxsync/ctxsync/internal/waitq"
)

// waitable is what a limiter lends to waiters. Every method is called with the
// waiters' lock held.
type waitable interface {
	// maxLocked is the most events the limiter can ever allow at once.
	maxLocked() int
	// takeLocked takes n events at now if the limiter has them, as the head
	// of the queue; otherwise it returns how long until it could.
	takeLocked(n int, now int64) (ok bool, wait int64)
	// earliestLocked returns a lower bound, on the limiter's clock, of when n
	// events could be taken after the ahead events queued before them.
	earliestLocked(ahead, n int, now int64) int64
	// setQueuedLocked tells the limiter whether goroutines wait: while they
	// do, AllowN refuses, so that no newcomer overtakes them.
	setQueuedLocked(queued bool)
}

// waiters queues the goroutines in WaitN, first in, first out.
//
// Only the head of the queue sleeps on a timer, until the limiter can give it
// what it asked for; the others wait on a waitq node until the head leaves and
// promotes the next. Nobody reserves events ahead of time, so a waiter that
// gives up has nothing to give back: its place simply goes to the next one.
// (x/time/rate reserves, then refunds on cancellation as best it can:
// golang/go#56924.)
type waiters struct {
	// q holds the waiters behind the head, valued at the events they ask
	// for. A grant of promoted makes one the head; a grant of oversize turns
	// it away after SetBurst. Its lock guards the fields below, and the slow
	// paths of the limiter.
	q waitq.Queue[int]

	head   bool          // a goroutine is the head
	kick   chan struct{} // the head's: makes it look again (SetRate, SetBurst)
	queued int           // events asked for by the head and everyone queued
}

// waitN waits for n events of l; n is valid and ctx live.
func (w *waiters) waitN(ctx context.Context, l waitable, n int) error {
	w.q.Lock()
	if n > l.maxLocked() {
		w.q.Unlock()
		return ErrExceedsBurst
	}
	if dl, ok := ctx.Deadline(); ok && l.earliestLocked(w.queued, n, nowNs()) > atNs(dl) {
		w.q.Unlock()
		return ErrWouldExceedDeadline
	}
	w.queued += n
	if !w.head {
		w.head = true
		l.setQueuedLocked(true)
		return w.headLocked(ctx, l, n)
	}
	node := w.q.Push(n)
	w.q.Unlock()
	if v, ok := w.q.Wait(ctx, node); ok {
		if v == oversize {
			return ErrExceedsBurst
		}
		w.q.Lock() // promoted: we are the head
		return w.headLocked(ctx, l, n)
	}
	w.q.Lock()
	switch v, granted, _ := w.q.Cancel(node); {
	case !granted:
		w.queued -= n
	case v == promoted:
		// Made head as ctx ended: pass the role on.
		w.leaveLocked(l, n)
	}
	// Turned away as ctx ended: refuseOversizeLocked settled everything.
	w.q.Unlock()
	return ctx.Err()
}

// What a waiter behind the head is granted.
const (
	promoted = 0  // it is the head now
	oversize = -1 // it asks for more than the burst now: ErrExceedsBurst
)

// headLocked is the wait of the head of the queue: take the events when the
// limiter has them. w.q must be locked; headLocked unlocks it.
func (w *waiters) headLocked(ctx context.Context, l waitable, n int) error {
	kick := make(chan struct{}, 1)
	w.kick = kick
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var err error
		if n > l.maxLocked() { // SetBurst shrank it
			err = ErrExceedsBurst
		} else {
			now := nowNs()
			ok, wait := l.takeLocked(n, now)
			if ok {
				w.leaveLocked(l, n)
				w.q.Unlock()
				return nil
			}
			if dl, has := ctx.Deadline(); has && now+wait > atNs(dl) {
				err = ErrWouldExceedDeadline
			} else {
				w.q.Unlock()
				if timer == nil {
					timer = time.NewTimer(time.Duration(wait))
				} else {
					timer.Reset(time.Duration(wait))
				}
				select {
				case <-timer.C:
				case <-kick:
				case <-ctx.Done():
					err = ctx.Err()
				}
				w.q.Lock()
			}
		}
		if err != nil {
			w.leaveLocked(l, n)
			w.q.Unlock()
			return err
		}
	}
}

// leaveLocked ends the turn of the head, which asked for n events, and
// promotes the next waiter. w.q must be locked.
func (w *waiters) leaveLocked(l waitable, n int) {
	w.queued -= n
	w.kick = nil
	if next := w.q.Front(); next != nil {
		w.q.Grant(next, promoted) // head stays true: the next one is it
		return
	}
	w.head = false
	l.setQueuedLocked(false)
}

// refuseOversizeLocked turns away, with ErrExceedsBurst, the waiters behind
// the head that ask for more than max events, after SetBurst lowered it to
// that: they would otherwise find out only when their turn came. The head
// finds out when kicked. w.q must be locked.
func (w *waiters) refuseOversizeLocked(max int) {
	for node := w.q.Front(); node != nil; {
		next := w.q.Next(node)
		if n := node.Val; n > max {
			w.queued -= n
			w.q.Grant(node, oversize)
		}
		node = next
	}
}

// kickLocked makes the head look again, after a change of rate or burst. w.q
// must be locked.
func (w *waiters) kickLocked() {
	if w.kick != nil {
		select {
		case w.kick <- struct{}{}:
		default: // already kicked
		}
	}
}
