package adaptive

import (
	"github.com/ctxsync/ctxsync/internal/clock"
	"github.com/ctxsync/ctxsync/internal/nocopy"
)

// A Ticket is a slot for one call, handed out by Limiter.Acquire. The caller
// finishes it, once, with Done or Ignore, which frees the slot and tells the
// Limiter how the call went.
//
// Done and Ignore mark the Ticket they finish, and a second finish of it
// panics. A Ticket must not be copied (go vet reports copies of *t): a copy
// could be finished a second time unseen, freeing a slot that another call
// holds. A Ticket that its caller keeps to itself costs no allocation (see
// Limiter.Acquire).
//
// A Ticket never finished keeps its slot: the Limiter counts it in flight for
// good, and a Limiter whose Tickets leak admits ever fewer calls. Finish
// every Ticket, with a defer if the call may panic. (A Ticket is not released
// when garbage collected: that would hide the leak, and cost every Acquire a
// finalizer.)
//
// A Ticket may be finished by any goroutine that the Acquire is synchronized
// before, but only once. The zero Ticket is not usable: Done
// and Ignore panic with "adaptive: ... of a Ticket not from Limiter.Acquire".
type Ticket struct {
	_ nocopy.NoCopy // a copy could be finished twice unseen
	l *Limiter

	// start is the time the Ticket was handed out, in ns by the Limiter's
	// clock, if it is timed: one call in mask+1 is (see estimator.mask).
	start int64

	// info holds the flags below and, if timed, the estimator's epoch at
	// the start (the top 32 bits) and the calls in flight with it at its
	// admission (saturated at 2³⁰-1: the largest count of a window needs no
	// more). Three words return in registers.
	//
	// ticketDone is set by the Done or Ignore that finishes the Ticket. It is
	// the caller's variable, as the Ticket is: an atomic or a lock would cost
	// as much as the rest of Done, to catch only two finishes racing each
	// other, a data race of the caller's that the race detector reports
	// (and release catches when it would take the count below zero).
	info uint64
}

const (
	ticketDone  = 1 << 0
	ticketTimed = 1 << 1
	infoShift   = 2 // the calls in flight, bits 2-31
	infoMax     = 1<<30 - 1
)

func (t *Ticket) timed() bool     { return t.info&ticketTimed != 0 }
func (t *Ticket) epoch() uint32   { return uint32(t.info >> 32) }
func (t *Ticket) inflight() int64 { return int64(t.info >> infoShift & infoMax) }

// timed reports whether the call whose admission made state word s is to be
// timed. Sampling by the admissions counted in the state word costs nothing
// more than the admission: mask+1 is a power of two dividing 2²².
func (l *Limiter) timed(s uint64) bool {
	return s>>admitsShift&l.mask.Load() == 0
}

// timedTicket sets *t to the Ticket of a timed call whose admission made
// state word s.
func (l *Limiter) timedTicket(s uint64, t *Ticket) {
	t.l = l
	t.info = uint64(l.epoch.Load())<<32 | uint64(min(inflightOf(s), infoMax))<<infoShift | ticketTimed
	// The time spent queued, if any, is not the service's: the latency
	// starts now.
	if l.clock == nil {
		t.start = clock.Now()
		return
	}
	ok := false
	defer func() {
		if !ok {
			l.release() // the Clock panicked: the caller gets no Ticket
		}
	}()
	t.start = int64(l.clock())
	ok = true
}

// Done finishes the call: with err nil, a success whose latency the Limiter
// learns from; with an error, a failure from overload (a timeout, a 503, a
// refusal), which lowers the limit. A failure that says nothing of the
// service's load (a bad request, the caller giving up) should be finished
// with Ignore instead.
//
// Done panics if t was not handed out by Acquire (the zero Ticket) or was
// already finished, or if Config.Clock panics (the Ticket is then finished as
// by Ignore).
func (t *Ticket) Done(err error) {
	// Small enough to be inlined: the untimed Ticket of a Limiter that
	// nobody waits on costs one atomic Add.
	if t == nil || t.l == nil || t.info != 0 {
		t.doneSlow(err)
		return
	}
	t.info = ticketDone
	t.l.release()
}

// doneSlow is Done for a timed Ticket, or a Ticket that Done panics for.
func (t *Ticket) doneSlow(err error) {
	t.finish("Done")
	if !t.timed() {
		t.l.release()
		return
	}
	t.l.sample(t, t.l.endNow(), err != nil)
}

// Ignore finishes the call without telling the Limiter anything of it: its
// slot is freed and the limit is left as it was.
//
// Ignore panics if t was not handed out by Acquire (the zero Ticket) or was
// already finished.
func (t *Ticket) Ignore() {
	t.finish("Ignore")
	t.l.release()
}

// finish marks t finished, panicking if it was already.
func (t *Ticket) finish(method string) {
	if t == nil {
		panic("adaptive: " + method + " of nil Ticket")
	}
	if t.l == nil {
		panic("adaptive: " + method + " of a Ticket not from Limiter.Acquire")
	}
	if t.info&ticketDone != 0 {
		panic("adaptive: Ticket finished twice")
	}
	t.info |= ticketDone
}

// endNow reads the Limiter's clock for a timed Ticket being finished, freeing
// its slot if the Clock panics.
func (l *Limiter) endNow() int64 {
	if l.clock == nil {
		return clock.Now()
	}
	ok := false
	defer func() {
		if !ok {
			l.release()
		}
	}()
	now := int64(l.clock())
	ok = true
	return now
}

// sample frees the slot of timed Ticket t, which ended at now (ns), and feeds
// its latency to the estimator.
func (l *Limiter) sample(t *Ticket, now int64, dropped bool) {
	rtt := now - t.start
	l.q.Lock()
	l.est.seen(t.inflight())
	// A latency below 0 or above an hour is a change of clock (a Ticket
	// carried across the edge of a testing/synctest bubble, or a Clock that
	// went back), not a measurement. now >= t.start first: the difference
	// of readings far apart wraps (a Clock at math.MinInt64 after one at
	// math.MaxInt64 would give a latency of 1 ns).
	if now >= t.start && rtt <= clock.Jump && l.est.sample(now, rtt, dropped, t.epoch()) {
		l.publishLocked()
	}
	if l.state.Add(^uint64(0))&inflightMask == inflightMask {
		l.q.Unlock()
		l.underflow()
	}
	l.grantLocked() // to the waiters: the slot, and those a higher limit frees
	l.q.Unlock()
}
