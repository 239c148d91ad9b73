package adaptive

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
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

	// q's lock guards everything below but the atomics; its waiters are the
	// calls past the limit.
	q        waitq.Queue[struct{}]
	est      estimator
	limit    int // int(est.limit)
	inflight int

	maxWait time.Duration        // as configured: 0 for twice the baseline
	clock   func() time.Duration // nil for the monotonic clock
	made    bool                 // by New

	// Gauges, stored under the lock and read without it.
	gLimit, gInflight, gWaiting, gBaseline atomic.Int64
	shed                                   atomic.Int64
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
	l := &Limiter{maxWait: cfg.MaxWait, clock: cfg.Clock, made: true, limit: init}
	l.est.init(cfg.Algorithm, lo, hi, init)
	l.gLimit.Store(int64(init))
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
// already done fails even when a slot is free; a call that would wait longer
// than MaxWait is shed at once. If a slot is handed over at the moment ctx
// ends, Acquire either returns a Ticket for it or passes it on; it is never
// lost.
//
// Acquire panics if ctx is nil, or if Config.Clock panics (the slot is given
// back first).
func (l *Limiter) Acquire(ctx context.Context) (*Ticket, error) {
	l.check()
	if err := waitq.CtxErr(ctx, "adaptive"); err != nil {
		return nil, err
	}
	l.q.Lock()
	if l.q.Len() == 0 && l.inflight < l.limit {
		l.admitLocked()
		t := &Ticket{l: l, timed: l.est.timed(), epoch: l.est.epoch}
		l.q.Unlock()
		if t.timed {
			t.start = t.userNow()
		}
		return t, nil
	}
	return l.acquireSlow(ctx)
}

// admitLocked counts one more call in flight.
func (l *Limiter) admitLocked() {
	l.inflight++
	l.est.seen(l.inflight)
	l.gInflight.Store(int64(l.inflight))
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

// acquireSlow queues the caller, or sheds it. l.q is locked.
func (l *Limiter) acquireSlow(ctx context.Context) (*Ticket, error) {
	wait, bounded := l.maxWaitLocked()
	if l.maxWait == NoWait || bounded && 2*l.expectedWaitLocked() > float64(wait) {
		// The caller would likely wait past MaxWait and be shed then,
		// having held its client that much longer: shed it now. The
		// estimate is a mean, and the wait of a caller near the back of
		// the queue varies: only a caller expected to wait less than
		// half of MaxWait is queued, so that the timer seldom fires and
		// nearly every shed call is shed at once.
		l.q.Unlock()
		l.shed.Add(1)
		return nil, ErrShed
	}
	wctx, cancel := ctx, context.CancelFunc(nil)
	if bounded {
		wctx, cancel = context.WithTimeout(ctx, wait)
	}
	wdone := wctx.Done()
	node := l.q.PushDone(wdone, struct{}{})
	l.gWaiting.Store(int64(l.q.Len()))
	l.q.Unlock()

	_, granted := l.q.Wait(wdone, node)
	if !granted {
		l.q.Lock()
		_, granted, _ = l.q.Cancel(node)
		if granted && ctx.Err() != nil {
			// The slot came as ctx ended: pass it on.
			l.releaseLocked()
			granted = false
		}
		// A grant that beat MaxWait's timer, the caller's ctx being live,
		// is kept: Front drops a waiter whose timer has fired, so the slot
		// came before it.
		l.gWaiting.Store(int64(l.q.Len()))
		l.q.Unlock()
	}
	if cancel != nil {
		cancel()
	}
	if !granted {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l.shed.Add(1)
		return nil, ErrShed
	}
	l.q.Lock()
	t := &Ticket{l: l, timed: l.est.timed(), epoch: l.est.epoch}
	l.q.Unlock()
	if t.timed {
		// The time spent queued is not the service's: the latency
		// starts now.
		t.start = t.userNow()
	}
	return t, nil
}

// expectedWaitLocked returns how long, in ns, a caller queued now would wait:
// the calls that must end before its turn, over the rate at which calls end.
func (l *Limiter) expectedWaitLocked() float64 {
	recent := l.est.recent
	if recent == 0 {
		return 0 // nothing measured yet: let it queue, MaxWait bounds it
	}
	need := float64(l.inflight-l.limit+l.q.Len()) + 1
	return need * recent / float64(max(l.inflight, 1))
}

// releaseLocked frees the slot of a call and hands the free slots to the
// waiters at the head of the queue.
func (l *Limiter) releaseLocked() {
	l.inflight--
	l.grantLocked()
}

// grantLocked hands free slots to the waiters, oldest first.
func (l *Limiter) grantLocked() {
	for l.inflight < l.limit {
		w := l.q.Front()
		if w == nil {
			break
		}
		l.admitLocked()
		l.q.Grant(w, struct{}{})
	}
	l.gInflight.Store(int64(l.inflight))
	l.gWaiting.Store(int64(l.q.Len()))
}

// Limit returns the limit at the moment of the call.
func (l *Limiter) Limit() int { l.check(); return int(l.gLimit.Load()) }

// InFlight returns the number of Tickets handed out and not finished, at the
// moment of the call. It may exceed Limit for a while after the limit falls.
func (l *Limiter) InFlight() int { l.check(); return int(l.gInflight.Load()) }

// Waiting returns the number of callers queued in Acquire at the moment of the
// call.
func (l *Limiter) Waiting() int { l.check(); return int(l.gWaiting.Load()) }

// Shed returns the number of calls shed with ErrShed since New.
func (l *Limiter) Shed() int64 { l.check(); return l.shed.Load() }

// Latency returns the baseline: the latency of the service when nothing
// queues, as the algorithm estimates it (the lowest mean latency of a window
// of calls over the last ten seconds), or 0 before one window has ended.
func (l *Limiter) Latency() time.Duration { l.check(); return time.Duration(l.gBaseline.Load()) }

// A Ticket is a slot for one call, handed out by Limiter.Acquire. The caller
// finishes it, once, with Done or Ignore, which frees the slot and tells the
// Limiter how the call went.
//
// A Ticket never finished keeps its slot: the Limiter counts it in flight for
// good, and a Limiter whose Tickets leak admits ever fewer calls. Finish
// every Ticket, with a defer if the call may panic. (A Ticket is not released
// when garbage collected: that would hide the leak, and cost every Acquire a
// finalizer.)
//
// A Ticket may be finished by any goroutine, but only once. The zero Ticket
// is not usable: Done and Ignore panic with "adaptive: ... of a Ticket not
// from Limiter.Acquire". A Ticket must not be copied.
type Ticket struct {
	_     nocopy.NoCopy // a copy would be finished twice unseen
	l     *Limiter
	start int64  // ns, by the Limiter's clock, if timed
	epoch uint32 // the estimator's epoch at the start
	timed bool   // the latency is measured (see estimator.timed)
	done  bool   // guarded by l.q
}

// Done finishes the call: with err nil, a success whose latency the Limiter
// learns from; with an error, a failure from overload (a timeout, a 503, a
// refusal), which lowers the limit. A failure that says nothing of the
// service's load (a bad request, the caller giving up) should be finished
// with Ignore instead.
//
// Done panics if t is nil, was not handed out by Acquire (the zero Ticket) or
// was already finished, or if Config.Clock panics
// (the Ticket is then finished as by Ignore).
func (t *Ticket) Done(err error) {
	if t == nil {
		panic("adaptive: Done of nil Ticket")
	}
	t.check("Done")
	if !t.timed {
		t.finish(0, err != nil, false)
		return
	}
	t.finish(t.userNow(), err != nil, true)
}

// Ignore finishes the call without telling the Limiter anything of it: its
// slot is freed and the limit is left as it was.
//
// Ignore panics if t is nil, was not handed out by Acquire (the zero Ticket)
// or was already finished.
func (t *Ticket) Ignore() {
	if t == nil {
		panic("adaptive: Ignore of nil Ticket")
	}
	t.check("Ignore")
	t.finish(0, false, false)
}

// check panics for the zero Ticket, which no Acquire handed out.
func (t *Ticket) check(method string) {
	if t.l == nil {
		panic("adaptive: " + method + " of a Ticket not from Limiter.Acquire")
	}
}

// userNow reads the Limiter's clock for t, finishing t as by Ignore if the
// clock panics, so that its slot is not lost.
func (t *Ticket) userNow() int64 {
	l := t.l
	if l.clock == nil {
		return clock.Now()
	}
	ok := false
	defer func() {
		if !ok {
			t.finish(0, false, false)
		}
	}()
	now := int64(l.clock())
	ok = true
	return now
}

func (t *Ticket) finish(now int64, dropped, measure bool) {
	l := t.l
	l.q.Lock()
	if t.done {
		l.q.Unlock()
		panic("adaptive: Ticket finished twice")
	}
	t.done = true
	l.inflight--
	// A latency below 0 or above an hour is a change of clock (a Ticket
	// carried across the edge of a testing/synctest bubble, or a Clock that
	// went back), not a measurement.
	rtt := now - t.start
	measure = measure && rtt >= 0 && rtt <= clock.Jump
	if !t.timed && dropped {
		l.est.untimedDrop()
	}
	if measure && l.est.sample(now, rtt, dropped, t.epoch) {
		l.limit = int(l.est.limit)
		l.gLimit.Store(int64(l.limit))
		l.gBaseline.Store(int64(math.Min(l.est.baseline, math.MaxInt64/2)))
	}
	l.grantLocked()
	l.q.Unlock()
}
