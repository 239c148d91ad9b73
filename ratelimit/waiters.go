package ratelimit

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/ctxsync/ctxsync/internal/waitq"
)

// waitable is what a limiter lends to waiters. Every method is called with the
// waiters' lock held.
type waitable interface {
	// maxLocked is the most events the limiter can ever allow at once.
	maxLocked() int
	// takeLocked takes n events at now if the limiter has them, as the head
	// of the queue; otherwise it returns how long until it could, or
	// math.MaxInt64 if the time it could is beyond what an int64 holds.
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
	// q holds the waiters behind the head, valued at what they ask for. A
	// grant makes one the head, or, with an error in turn.refused, turns it
	// away (see refuseLocked). Its lock guards the fields below, and the
	// slow paths of the limiter.
	q waitq.Queue[turn]

	head     bool            // a goroutine is the head
	headN    int             // the events the head asked for
	headDone <-chan struct{} // the Done of the head's ctx
	kick     chan struct{}   // the head's: makes it look again (SetRate, SetBurst)

	// queued is the events asked for by the head and everyone queued,
	// including those whose ctx has ended but whose goroutines have not
	// yet settled (see waitq.List.Front): it is a bound above, exact once
	// they have. aheadLocked counts exactly.
	queued int
}

// waitN waits for n events of l; n is valid and ctx live.
func (w *waiters) waitN(ctx context.Context, l waitable, n int) error {
	// ctx is the caller's code: read what is needed of it before locking
	// (see waitq.Ended).
	deadline := int64(math.MaxInt64)
	if dl, ok := ctx.Deadline(); ok {
		deadline = atNs(dl)
	}
	done := ctx.Done()
	w.q.Lock()
	if n > l.maxLocked() {
		w.q.Unlock()
		return ErrExceedsBurst
	}
	now := nowNs()
	// queued bounds the events ahead from above: only when it puts the
	// deadline out of reach is it worth counting them exactly.
	if after(l.earliestLocked(w.queued, n, now), deadline) && after(l.earliestLocked(w.aheadLocked(), n, now), deadline) {
		w.q.Unlock()
		return ErrWouldExceedDeadline
	}
	w.queued += n
	if !w.head {
		w.head = true
		w.headN, w.headDone = n, done
		l.setQueuedLocked(true)
		return w.headLocked(ctx, done, deadline, l, n)
	}
	// Queued with its ctx, so that once ctx has ended nobody grants it or
	// counts it ahead of the others (aheadLocked, refuseLocked), although
	// its goroutine may not run for a while.
	node := w.q.PushDone(done, turn{n: n, deadline: deadline, done: done})
	w.q.Unlock()
	if v, ok := w.q.Wait(done, node); ok {
		if v.refused != nil {
			return v.refused
		}
		w.q.Lock() // promoted: we are the head
		return w.headLocked(ctx, done, deadline, l, n)
	}
	w.q.Lock()
	switch v, granted, _ := w.q.Cancel(node); {
	case !granted: // removed here, or dropped by Front or Next
		w.queued -= n
	case v.refused == nil:
		// Made head as ctx ended: pass the role on.
		w.leaveLocked(l, n)
	}
	// Turned away as ctx ended: refuseLocked settled everything.
	w.q.Unlock()
	return waitq.DoneErr(ctx)
}

// A turn is what a waiter behind the head asks for and, once it is granted,
// the answer.
type turn struct {
	n        int             // events asked for
	deadline int64           // of the waiter's ctx, on the limiter's clock; math.MaxInt64 for none
	done     <-chan struct{} // of the waiter's ctx: once head, w.headDone

	// refused is set by a grant that turns the waiter away, to the error
	// its WaitN returns; a grant without it makes the waiter the head.
	refused error
}

// headLocked is the wait of the head of the queue: take the events when the
// limiter has them. done and deadline are those of ctx, read before w.q was
// first locked. w.q must be locked; headLocked unlocks it.
func (w *waiters) headLocked(ctx context.Context, done <-chan struct{}, deadline int64, l waitable, n int) error {
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
		if waitq.Ended(done) {
			// Tokens that came after ctx ended are not ours: a waiter whose
			// ctx has ended is never granted anything. (A waiter promoted
			// to head as its ctx ended gets here too, and passes the role
			// on.) The wake below may pick the timer when ctx ended too.
			err = errCtxEnded
		} else if n > l.maxLocked() { // SetBurst shrank it
			err = ErrExceedsBurst
		} else {
			now := nowNs()
			ok, wait := l.takeLocked(n, now)
			if ok {
				w.leaveLocked(l, n)
				w.q.Unlock()
				return nil
			}
			if after(addSat(now, wait), deadline) {
				err = ErrWouldExceedDeadline
			} else {
				w.q.Unlock()
				// A wait of math.MaxInt64 is one no int64 holds: there is
				// no time to wake at, only a kick or the end of ctx. (A
				// timer would fire at the end of a bubble's time, again and
				// again, and spin.)
				var wake <-chan time.Time
				if wait < math.MaxInt64 {
					if timer == nil {
						timer = time.NewTimer(time.Duration(wait))
					} else {
						timer.Reset(time.Duration(wait))
					}
					wake = timer.C
				}
				select {
				case <-wake:
				case <-kick:
				case <-done:
					err = errCtxEnded
				}
				w.q.Lock()
			}
		}
		if err != nil {
			w.leaveLocked(l, n)
			w.q.Unlock()
			if err == errCtxEnded {
				return waitq.DoneErr(ctx) // read unlocked: the caller's code
			}
			return err
		}
	}
}

// errCtxEnded stands, under the lock, for the ctx.Err() that headLocked
// returns once it has unlocked.
var errCtxEnded = errors.New("ratelimit: ctx ended")

// leaveLocked ends the turn of the head, which asked for n events, and
// promotes the next waiter. w.q must be locked.
func (w *waiters) leaveLocked(l waitable, n int) {
	w.queued -= n
	w.kick = nil
	if next := w.q.Front(); next != nil {
		w.headN, w.headDone = next.Val.n, next.Val.done
		w.q.Grant(next, turn{}) // head stays true: the next one is it
		return
	}
	w.head = false
	w.headN, w.headDone = 0, nil
	l.setQueuedLocked(false)
}

// refuseLocked turns away the waiters behind the head that l, changed by
// SetRate or SetBurst, can no longer serve as WaitN promised on entry: those
// that ask for more than l can ever allow (ErrExceedsBurst), and those whose
// deadline now comes before the earliest moment their turn could
// (ErrWouldExceedDeadline). They would otherwise find out only when their
// turn came, or their deadline passed; those behind them move up. The head
// finds out when kicked. w.q must be locked.
func (w *waiters) refuseLocked(l waitable, now int64) {
	// The events asked for ahead of the first waiter: the head's. Front
	// and Next pass over (and drop) the waiters whose ctx has ended.
	ahead := w.headAheadLocked()
	most := l.maxLocked()
	for node := w.q.Front(); node != nil; {
		next := w.q.Next(node)
		var refused error
		switch t := node.Val; {
		case t.n > most:
			refused = ErrExceedsBurst
		case after(l.earliestLocked(ahead, t.n, now), t.deadline):
			refused = ErrWouldExceedDeadline
		default:
			ahead = queuedSum(ahead, t.n)
		}
		if refused != nil {
			w.queued -= node.Val.n
			w.q.Grant(node, turn{refused: refused})
		}
		node = next
	}
}

// aheadLocked returns the events asked for by the head and the waiters
// queued whose ctx has not ended. w.q must be locked.
func (w *waiters) aheadLocked() int {
	ahead := w.headAheadLocked()
	for node := w.q.Front(); node != nil; node = w.q.Next(node) {
		ahead = queuedSum(ahead, node.Val.n)
	}
	return ahead
}

// headAheadLocked returns the events the head asked for, or 0 if its ctx
// has ended: it takes nothing then, and leaves when its goroutine next runs
// (headLocked looks at ctx before it takes, under the lock, and ctx, once
// ended, stays ended). w.q must be locked.
func (w *waiters) headAheadLocked() int {
	select {
	case <-w.headDone: // a nil one, of no head or a ctx that never ends, blocks
		return 0
	default:
		return w.headN
	}
}

// after reports whether events at time at come too late for a ctx whose
// deadline is deadline: at or after it, as ctx ends at its deadline and a
// grant then would be one to a ctx that has ended. A deadline of
// math.MaxInt64 stands for none, or one beyond what an int64 holds, and at
// math.MaxInt64 for a time beyond it too: neither is too late for it.
func after(at, deadline int64) bool {
	return at > deadline || at == deadline && deadline < math.MaxInt64
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
