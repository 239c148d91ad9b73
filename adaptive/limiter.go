package adaptive

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// ErrShed is returned by Acquire for a call that the Limiter refuses: the wait
// it would face past the limit is longer than the Config's MaxWait, or it
// waited that long.
var ErrShed = errors.New("adaptive: call shed")

// unboundedWait is the MaxWait from which a wait is bounded by the caller's
// ctx alone: a timer that far off would never fire, and the deadline it would
// need is past what time.Time can count to.
const unboundedWait = 100 * 365 * 24 * time.Hour

// The Limiter's state word (see Limiter.state).
const (
	inflightMask = 1<<41 - 1 // bits 0-40: the calls in flight, at most MaxLimit = 2⁴⁰
	queuedBit    = 1 << 41   // callers are queued
	admitsShift  = 42        // bits 42-63: the admissions, modulo 2²², to sample the clock by

	// admit counts a call in flight and its admission. Adding it to the
	// state word carries the admissions off its top, never into the bits
	// below.
	admit = 1 | 1<<admitsShift
)

// inflightOf returns the calls in flight of state word s.
func inflightOf(s uint64) int64 { return int64(s & inflightMask) }

// A Limiter bounds the calls in flight to a limit that it adjusts from what it
// measures: the latency of the calls that succeed and the calls that fail from
// overload (see Algorithm). Callers past the limit wait first in, first out,
// as on a Semaphore, and are shed with ErrShed, at once, when the wait they
// would face is longer than the Config allows: a service under three times its
// capacity answers the calls it can, fast, and refuses the rest, fast.
//
// Use New; the zero Limiter is not usable, and its methods panic with
// "adaptive: use New". A Limiter must not be copied after first use. It is
// safe for concurrent use by multiple goroutines.
//
// In the terminology of the Go memory model, the Done or Ignore of a Ticket is
// synchronized before the return of any Acquire that takes the slot it freed.
//
// A Limiter made outside a testing/synctest bubble may be used inside one, and
// one made inside keeps working after it: a change of clock (the bubble's
// starts in 2000) restarts its measurements, not its limit.
type Limiter struct {
	_ nocopy.NoCopy

	// state is the word every Acquire and Done touches: the calls in
	// flight, the admissions counted (modulo 2²²: one in mask+1 is timed),
	// and queuedBit, set while callers are queued. An Acquire takes a slot
	// with one CompareAndSwap, only while queuedBit is clear and the calls
	// in flight are below limit, so that a newcomer never overtakes a
	// queued caller: a caller sets queuedBit, under q's lock, with a
	// CompareAndSwap of the very word it found full, so a slot freed in
	// between fails it and is taken by that caller instead. An untimed
	// Done frees its slot with one Add and locks q only if queuedBit was
	// set, to hand the slot on; with queuedBit set no newcomer can take it.
	state atomic.Uint64
	limit atomic.Int64  // the limit enforced: int(est.limit), stored under q's lock
	mask  atomic.Uint64 // est.mask, stored under q's lock
	epoch atomic.Uint32 // est.epoch, stored under q's lock
	made  bool          // by New

	maxWait time.Duration        // as configured: 0 for twice the baseline
	clock   func() time.Duration // nil for the monotonic clock

	// q's lock guards est, the queue, and every change of limit, mask and
	// epoch, and of queuedBit; its waiters are the callers past the limit,
	// each handed the state word its admission made.
	q   waitq.Queue[uint64]
	est estimator

	// Gauges, stored under the lock and read without it.
	gWaiting, gBaseline atomic.Int64
	shed                atomic.Int64
}

// New returns a Limiter configured by cfg.
//
// New panics, with a message beginning with "adaptive:", if cfg is not valid
// (see Config.Validate).
func New(cfg Config) *Limiter {
	if err := cfg.Validate(); err != nil {
		panic(err.Error())
	}
	lo, hi, init := cfg.limits()
	l := &Limiter{maxWait: cfg.MaxWait, clock: cfg.Clock, made: true}
	l.est.init(cfg.Algorithm, lo, hi, init)
	l.limit.Store(int64(init))
	return l
}

func (l *Limiter) check() {
	if !l.made {
		panic("adaptive: use New; the zero Limiter is not usable")
	}
}

// Acquire returns a Ticket for one call, waiting if the limit is reached,
// after the callers already waiting, until a call ends, ctx is done, or the
// wait reaches MaxWait. The caller makes its call and then finishes the
// Ticket with Done or Ignore.
//
// On failure it returns ctx.Err(), or ErrShed, and no Ticket: a ctx that is
// already done fails even when a slot is free; a call that would wait
// longer than MaxWait is shed at once. If a slot is handed over at the moment
// ctx ends, Acquire either returns a Ticket for it or passes it on; it is
// never lost. A method of ctx that panics leaves the Limiter as it was. (A ctx
// whose Done is closed while its Err is nil, against the Context contract,
// fails with context.Canceled.)
//
// Acquire panics if ctx is nil, or if Config.Clock panics (the slot is given
// back first).
//
// Acquire allocates nothing when the caller keeps the Ticket to itself (in a
// local variable, finished with a defer, say): it is small enough to be
// inlined, and the Ticket then lives in the caller's frame.
func (l *Limiter) Acquire(ctx context.Context) (*Ticket, error) {
	t := new(Ticket)
	if err := l.acquire(ctx, t); err != nil {
		return nil, err
	}
	return t, nil
}

// acquire is Acquire, setting *t to the Ticket. It keeps no reference to t,
// so that a Ticket its caller does not let escape stays on the stack.
func (l *Limiter) acquire(ctx context.Context, t *Ticket) error {
	l.check()
	if ctx == nil {
		waitq.PanicNilCtx("adaptive")
	}
	// The caller's ctx is the caller's code (a custom Context may panic,
	// or call back into the Limiter): Done is read before the call holds
	// anything, and Err only once it holds nothing. In between, ctx is
	// looked at through done, which runs no code of the caller's.
	done := ctx.Done()
	for s := l.state.Load(); s&queuedBit == 0 && inflightOf(s) < l.limit.Load(); s = l.state.Load() {
		if !l.state.CompareAndSwap(s, s+admit) {
			continue // another call came or went: look again
		}
		// ctx is looked at once the slot is taken, so that a ctx that
		// ended before the slot was free fails the call; and not
		// before, as a done ctx is rare and the look costs as much as
		// the rest. A done ctx holds the slot for that moment, as a
		// call that ended at once would.
		if waitq.Ended(done) {
			l.release()
			return ctxErr(ctx)
		}
		if s += admit; l.timed(s) {
			l.timedTicket(s, t)
			return nil
		}
		t.l = l
		return nil
	}
	if waitq.Ended(done) {
		return ctxErr(ctx)
	}
	v, err := l.acquireSlow(ctx, done)
	t.l, t.start, t.info = v.l, v.start, v.info
	return err
}

// keep makes the Ticket of a slot that the caller took by itself, s being the
// state word its admission made, after done, its ctx's Done channel, was first
// looked at. If ctx has ended since, the slot may have been freed after it
// ended, and a caller whose ctx ended must not have it: it is passed on, and
// keep returns ctx.Err().
func (l *Limiter) keep(ctx context.Context, done <-chan struct{}, s uint64) (Ticket, error) {
	if waitq.Ended(done) {
		l.release()
		return Ticket{}, ctxErr(ctx)
	}
	return l.ticket(s), nil
}

// ticket returns the Ticket of a slot whose admission made state word s.
func (l *Limiter) ticket(s uint64) Ticket {
	if l.timed(s) {
		var t Ticket
		l.timedTicket(s, &t)
		return Ticket{l: t.l, start: t.start, info: t.info}
	}
	return Ticket{l: l}
}

// ctxErr returns ctx.Err() for a ctx whose Done channel is closed. A Context
// whose Err is then nil breaks the Context contract; Acquire fails with
// context.Canceled rather than return no Ticket and no error.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.Canceled
}

// acquireSlow takes a slot, queues the caller, or sheds it; done is its
// ctx's Done channel.
func (l *Limiter) acquireSlow(ctx context.Context, done <-chan struct{}) (Ticket, error) {
	var wdone <-chan struct{}
	var cancel context.CancelFunc // MaxWait's timer, once made
	l.q.Lock()
	for {
		if s, ok := l.admitLocked(); ok {
			l.q.Unlock()
			l.stopTimer(cancel, true)
			return l.keep(ctx, done, s)
		}
		wait, bounded := l.maxWaitLocked()
		if l.maxWait == NoWait || bounded && 2*l.expectedWaitLocked() > float64(wait) {
			// The caller would likely wait past MaxWait and be shed
			// then, having held its client that much longer: shed it
			// now. The estimate is a mean, and the wait of a caller
			// near the back of the queue varies: only a caller expected
			// to wait less than half of MaxWait is queued, so that the
			// timer seldom fires and nearly every shed call is shed at
			// once.
			l.q.Unlock()
			l.stopTimer(cancel, false)
			l.shed.Add(1)
			return Ticket{}, ErrShed
		}
		if !bounded {
			wdone = done
		} else if wdone == nil {
			// MaxWait's timer is a context made from ctx, and so made
			// with the lock released; only once the caller is to
			// queue, so that a shed call costs no timer. The decision
			// is then taken again.
			l.q.Unlock()
			wdone, cancel = timeout(ctx, wait)
			l.q.Lock()
			continue
		}
		if l.markQueuedLocked() {
			break
		}
		// A slot came free as we looked: take it.
	}
	node := l.q.PushDone(wdone, 0)
	l.gWaiting.Store(int64(l.q.Len()))
	l.q.Unlock()

	s, granted := l.q.Wait(wdone, node)
	if !granted {
		l.q.Lock()
		s, granted, _ = l.q.Cancel(node)
		if !granted {
			l.grantLocked() // clears queuedBit if we were the last
		}
		l.q.Unlock()
	}
	l.stopTimer(cancel, granted)
	if granted {
		// Front drops a waiter whose wdone is closed, so the slot came
		// before ctx or MaxWait's timer ended: keep it, unless the
		// caller's ctx has ended by now (wdone, MaxWait's, closes a
		// moment after ctx's own).
		return l.keep(ctx, done, s)
	}
	if err := ctx.Err(); err != nil {
		return Ticket{}, err
	}
	l.shed.Add(1)
	return Ticket{}, ErrShed
}

// stopTimer stops MaxWait's timer, if one was made. Its cancel runs code of
// the caller's ctx (the context package looks for the parent's cancelCtx with
// its Value method): if that panics while the caller holds a slot, holding,
// the slot is passed on, so that it is not lost.
func (l *Limiter) stopTimer(cancel context.CancelFunc, holding bool) {
	if cancel == nil {
		return
	}
	if !holding {
		cancel()
		return
	}
	ok := false
	defer func() {
		if !ok {
			l.release()
		}
	}()
	cancel()
	ok = true
}

// timeout returns the Done channel of a context that ends with ctx or after
// d, and its CancelFunc.
func timeout(ctx context.Context, d time.Duration) (<-chan struct{}, context.CancelFunc) {
	wctx, cancel := context.WithTimeout(ctx, d)
	return wctx.Done(), cancel
}

// admitLocked takes a slot for the caller if one is free and nobody is
// queued, and returns the state word its admission made. l.q is locked.
func (l *Limiter) admitLocked() (uint64, bool) {
	if l.q.Len() > 0 {
		return 0, false
	}
	lim := l.limit.Load()
	for {
		s := l.state.Load()
		if inflightOf(s) >= lim {
			return 0, false
		}
		if l.state.CompareAndSwap(s, s+admit) {
			return s + admit, true
		}
	}
}

// markQueuedLocked sets queuedBit, so that no newcomer takes a slot past the
// caller about to queue, and reports whether it did. It reports false if a
// slot came free since admitLocked looked: the caller takes it instead (it is
// first, nobody being queued). l.q is locked.
func (l *Limiter) markQueuedLocked() bool {
	lim := l.limit.Load()
	for {
		s := l.state.Load()
		if s&queuedBit != 0 {
			return true
		}
		if inflightOf(s) < lim {
			return false
		}
		if l.state.CompareAndSwap(s, s|queuedBit) {
			return true
		}
	}
}

// maxWaitLocked returns the longest a caller may wait now, and false if only
// its ctx bounds it.
func (l *Limiter) maxWaitLocked() (time.Duration, bool) {
	switch {
	case l.maxWait >= unboundedWait:
		return 0, false
	case l.maxWait != 0:
		return l.maxWait, true
	case l.est.baseline == 0:
		return time.Second, true
	}
	return time.Duration(math.Min(2*l.est.baseline, float64(unboundedWait))), true
}

// expectedWaitLocked returns how long, in ns, a caller queued now would wait:
// the calls that must end before its turn, over the rate at which calls end.
func (l *Limiter) expectedWaitLocked() float64 {
	recent := l.est.recent
	if recent == 0 {
		return 0 // nothing measured yet: let it queue, MaxWait bounds it
	}
	inflight := inflightOf(l.state.Load())
	need := float64(inflight-l.limit.Load()+int64(l.q.Len())) + 1
	return need * recent / float64(max(inflight, 1))
}

// release frees a slot. Only if callers are queued does it lock, to hand the
// slot to the oldest: while queuedBit is set no newcomer can take it.
func (l *Limiter) release() {
	// A count taken below zero shows every bit of the count set. It
	// borrows from queuedBit too, and so sets it if callers were not
	// queued, but clears it if they were: the count's bits are looked at
	// as well, or a Ticket finished twice while callers queue would go
	// unseen and leave the Limiter with no slot and nobody queued, for good.
	// The word's bits of queuedBit and the count, read as a number, are at
	// least inflightMask exactly when queuedBit is set or the count is all
	// ones: one comparison, which keeps release small enough to be inlined.
	if s := l.state.Add(^uint64(0)); s&(queuedBit|inflightMask) >= inflightMask {
		l.releaseSlow(s)
	}
}

// releaseSlow finishes a release that made state word s: callers are queued,
// or the count went below zero.
func (l *Limiter) releaseSlow(s uint64) {
	if s&inflightMask == inflightMask {
		l.underflow()
	}
	l.q.Lock()
	l.grantLocked()
	l.q.Unlock()
}

// underflow undoes a release that took the calls in flight below zero, which
// only a Ticket finished twice unseen (a copy, or two finishes racing) can
// do, and panics.
func (l *Limiter) underflow() {
	l.state.Add(1)
	panic("adaptive: Ticket finished twice")
}

// grantLocked hands free slots to the waiters, oldest first, and clears
// queuedBit once nobody is queued. l.q is locked.
func (l *Limiter) grantLocked() {
	lim := l.limit.Load()
	for {
		s := l.state.Load()
		if inflightOf(s) >= lim {
			break
		}
		w := l.q.Front()
		if w == nil {
			break
		}
		// It fails only for a release of another slot meanwhile: no
		// newcomer takes one while queuedBit is set.
		if l.state.CompareAndSwap(s, s+admit) {
			l.q.Grant(w, s+admit)
		}
	}
	if l.q.Len() == 0 {
		for {
			s := l.state.Load()
			if s&queuedBit == 0 || l.state.CompareAndSwap(s, s&^queuedBit) {
				break
			}
		}
	}
	l.gWaiting.Store(int64(l.q.Len()))
}

// publishLocked makes the estimator's new limit, sampling and epoch the ones
// Acquire reads, and hands out the slots a higher limit frees. l.q is locked.
func (l *Limiter) publishLocked() {
	l.limit.Store(int64(l.est.limit))
	l.mask.Store(l.est.mask)
	l.epoch.Store(l.est.epoch)
	l.gBaseline.Store(int64(math.Min(l.est.baseline, math.MaxInt64/2)))
}

// Limit returns the limit at the moment of the call.
func (l *Limiter) Limit() int { l.check(); return int(l.limit.Load()) }

// InFlight returns the number of Tickets handed out and not finished, at the
// moment of the call. It may exceed Limit for a while after the limit falls.
func (l *Limiter) InFlight() int { l.check(); return int(inflightOf(l.state.Load())) }

// Waiting returns the number of callers queued in Acquire at the moment of the
// call.
func (l *Limiter) Waiting() int { l.check(); return int(l.gWaiting.Load()) }

// Shed returns the number of calls shed with ErrShed since New.
func (l *Limiter) Shed() int64 { l.check(); return l.shed.Load() }

// Latency returns the baseline: the latency of the service when nothing
// queues, as the algorithm estimates it (the lowest mean latency of a window
// of calls over the last ten seconds), or 0 before one window has ended.
func (l *Limiter) Latency() time.Duration { l.check(); return time.Duration(l.gBaseline.Load()) }
