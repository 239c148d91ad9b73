package breaker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
)

// The state word: gen<<stateBits | disabledBit | State.
const (
	stateMask   = 3
	disabledBit = 4
	stateBits   = 3

	consecShift = 32                 // of the generation tag in Breaker.consec
	consecCount = 1<<consecShift - 1 // the count in Breaker.consec
)

// consecTag is Breaker.consec with the generation of state word s and a count
// of 0.
func consecTag(s uint64) uint64 { return s >> stateBits << consecShift }

// event is a change of state, queued for OnStateChange.
type event struct {
	from, to State
	counts   Counts
}

// run calls fn; if fn panics, it records a failure and lets the panic go on.
func (b *Breaker) run(ctx context.Context, fn func(context.Context) error, s uint64, start int64) error {
	ok := false
	defer func() {
		if !ok {
			b.finish(s, errPanic, true, start)
		}
	}()
	err := fn(ctx)
	ok = true
	return err
}

// errPanic stands for the outcome of a call that panicked.
var errPanic = errors.New("breaker: call panicked")

// succeeded records a success of a call admitted in state word s, outside
// half-open: it ends a run of failures, if they are of the same generation.
func (b *Breaker) succeeded(s uint64) {
	b.successes.Add(1)
	tag := consecTag(s)
	if c := b.consec.Load(); c != tag { // a load, not a store, in the common case
		if c&^consecCount == tag {
			// If a failure is counted meanwhile, the CAS fails and the
			// failure stands: it came after this success.
			b.consec.CompareAndSwap(c, tag)
		}
	}
}

// admit decides, on the slow path, whether a call may go ahead, the breaker's
// state word having been s. It returns the state word the call is admitted
// under (an open breaker may have become half-open), and the call's start
// time if slow calls are tracked.
func (b *Breaker) admit(s uint64) (admitted uint64, start int64, err error) {
	st := State(s & stateMask)
	if s&disabledBit == 0 && st == Open && b.expired.Load() != s>>stateBits {
		// The open time runs: refuse without the lock and without the
		// clock, which the opening's timer reads for us. Every refusalCheck
		// refusals, read it anyway, in case that timer cannot fire (it
		// belonged to a synctest bubble that has ended).
		n := b.rejected.Add(1)
		if n%refusalCheck != 0 || !b.openTimeUp() {
			return 0, 0, b.openErr.Load()
		}
		b.rejected.Add(-1)
	}
	if s&disabledBit == 0 && st != Closed {
		b.mu.Lock()
		s, err = b.admitLocked()
		b.unlock()
		if err != nil {
			return 0, 0, err
		}
	}
	if b.s.SlowCallDuration > 0 {
		start = clock.Now()
	}
	return s, start, nil
}

// admitLocked decides for an open or half-open breaker, moving it from open to
// half-open if its time is up, and takes a trial slot. It returns the state
// word the call is admitted under. b.mu must be held.
func (b *Breaker) admitLocked() (uint64, error) {
	s := b.state.Load()
	if s&disabledBit != 0 {
		return s, nil
	}
	switch State(s & stateMask) {
	case Open:
		if b.forced || !b.openTimeUp() {
			b.rejected.Add(1)
			return 0, b.openErr.Load()
		}
		b.setStateLocked(HalfOpen)
		s = b.state.Load()
		fallthrough
	case HalfOpen:
		if b.probes >= b.s.HalfOpenMaxCalls {
			b.rejected.Add(1)
			return 0, b.halfOpenErr
		}
		b.probes++
	}
	return s, nil
}

// refusalCheck is how often a refusal reads the clock, in case the timer of
// the opening cannot fire.
const refusalCheck = 64

// openTimeUp reads the clock to tell whether the open time is up. An end
// further in the future than any opening lasts was set on another clock (see
// internal/clock), and counts as up.
func (b *Breaker) openTimeUp() bool {
	now := clock.Now()
	until := b.openUntil.Load()
	return now >= until || until-now > 2*int64(time.Hour)+b.openFor.Load()
}

// finish records the outcome of a call admitted in state word s. admitted
// reports that the call went through admit (and holds a trial slot if s was
// half-open).
func (b *Breaker) finish(s uint64, err error, admitted bool, start int64) {
	var failure, ignored bool
	switch {
	case err == errPanic:
		failure = true
	case err != nil && b.s.IsIgnored(err):
		ignored = true
	default:
		failure = b.s.IsFailure(err)
	}
	slow := false
	var now int64
	if b.s.SlowCallDuration > 0 || b.window != nil && b.window.buckets != nil {
		now = clock.Now()
		slow = b.s.SlowCallDuration > 0 && now-start > int64(b.s.SlowCallDuration)
	}
	if slow {
		b.slow.Add(1)
	}
	st := State(s & stateMask)
	if s&disabledBit == 0 && st == HalfOpen && admitted {
		b.mu.Lock()
		b.finishTrialLocked(s, failure, ignored)
		b.unlock()
		return
	}
	switch {
	case ignored:
		b.ignored.Add(1)
		return
	case failure:
		b.failed(s)
	default:
		b.succeeded(s)
	}
	if b.window != nil && st == Closed {
		// A disabled breaker keeps its window too, to show in Metrics what
		// its rules would do; it only never trips.
		calls, failures, slows, ok := b.window.add(s>>stateBits, now, failure, slow)
		if ok && s&disabledBit == 0 && b.ratesTrip(calls, failures, slows) {
			b.mu.Lock()
			if b.state.Load() == s {
				b.tripLocked()
			}
			b.unlock()
		}
	}
}

// failed records a failure of a call admitted in state word s, outside
// half-open, and opens a closed breaker if the consecutive-failure rule says
// so. A failure of an earlier generation than the current one counts in
// Counts only.
func (b *Breaker) failed(s uint64) {
	b.failures.Add(1)
	b.successesAtFailure.Store(b.successes.Load())
	tag := consecTag(s)
	var n uint64
	for {
		c := b.consec.Load()
		if c&^consecCount != tag {
			return
		}
		if b.consec.CompareAndSwap(c, c+1) {
			n = c + 1 - tag
			break
		}
	}
	if b.s.consecutive && n >= uint64(b.s.FailureThreshold) && s&(stateMask|disabledBit) == uint64(Closed) {
		b.mu.Lock()
		if b.state.Load() == s {
			b.tripLocked()
		}
		b.unlock()
	}
}

// ratesTrip reports whether the rate rules open the breaker, given the
// totals of the window.
func (b *Breaker) ratesTrip(calls, failures, slows int) bool {
	if calls < b.s.MinimumCalls {
		return false
	}
	pct := func(n int) float64 { return 100 * float64(n) / float64(calls) }
	return (b.s.FailureRateThreshold > 0 && pct(failures) >= b.s.FailureRateThreshold) ||
		(b.s.SlowCallRateThreshold > 0 && pct(slows) >= b.s.SlowCallRateThreshold)
}

// finishTrialLocked records the outcome of a trial call. b.mu must be held.
func (b *Breaker) finishTrialLocked(s uint64, failure, ignored bool) {
	if b.state.Load() != s {
		return // the breaker changed state since: the call's slot is gone
	}
	b.probes--
	switch {
	case ignored:
		b.ignored.Add(1)
	case failure:
		b.failures.Add(1)
		b.consec.Add(1)
		b.successesAtFailure.Store(b.successes.Load())
		b.tripLocked()
	default:
		b.successes.Add(1)
		b.consec.Store(consecTag(s))
		b.probeWins++
		if b.probeWins >= b.s.SuccessThreshold {
			b.openings = 0
			b.setStateLocked(Closed)
		}
	}
}

// tripLocked opens the breaker. b.mu must be held.
func (b *Breaker) tripLocked() {
	b.openings++
	d := b.s.OpenTimeout
	if b.s.OpenBackoff != nil {
		d = b.s.OpenBackoff(b.openings)
	}
	if b.s.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + b.s.Jitter*(2*rand.Float64()-1)))
	}
	until := clock.Now() + int64(d)
	b.openFor.Store(int64(d))
	b.openUntil.Store(until)
	b.openErr.Store(b.openError(until, d))
	b.setStateLocked(Open)
	gen := b.state.Load() >> stateBits
	// A runtime timer, not a goroutine, marks the opening as nearly over, a
	// little before its end. Until it fires, refusals need no clock; after,
	// they read it, so that the end is exact (and a call at the very end,
	// on a synctest bubble's clock, is not refused for want of the timer's
	// goroutine having run). The next call after the end moves the breaker
	// to half-open.
	b.timer = time.AfterFunc(d-min(d/10, 100*time.Millisecond), func() { b.expired.Store(gen) })
}

// openError returns the error that refuses calls during an opening of length
// d that ends at until. b.mu must be held.
func (b *Breaker) openError(until int64, d time.Duration) *OpenError {
	if b.forced {
		return &OpenError{Name: b.s.Name, State: Open, Forced: true, openFor: d}
	}
	return &OpenError{Name: b.s.Name, State: Open, Until: clock.Time(until), openFor: d}
}

// setStateLocked moves to state to, starting a new generation of counts, and
// queues the change for OnStateChange. b.mu must be held.
func (b *Breaker) setStateLocked(to State) {
	old := b.state.Load()
	from := State(old & stateMask)
	gen := old>>stateBits + 1
	counts := b.countsLocked()
	b.total.add(counts)
	b.successes.Store(0)
	b.failures.Store(0)
	b.ignored.Store(0)
	b.rejected.Store(0)
	b.slow.Store(0)
	b.consec.Store(consecTag(gen << stateBits))
	b.successesAtFailure.Store(0)
	b.probes, b.probeWins = 0, 0
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if b.window != nil && to == Closed {
		b.window.reset(gen)
	}
	b.state.Store(gen<<stateBits | old&disabledBit | uint64(to))
	if b.s.OnStateChange != nil && from != to {
		b.events = append(b.events, event{from, to, counts})
	}
}

// unlock unlocks b.mu, then reports the changes of state queued meanwhile, in
// order and outside the lock. If another goroutine is already reporting, it
// reports these too, after its own.
func (b *Breaker) unlock() {
	if len(b.events) == 0 || b.delivering {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	for len(b.events) > 0 {
		e := b.events[0]
		b.events = b.events[1:]
		b.mu.Unlock()
		b.deliver(e)
		b.mu.Lock()
	}
	b.events = nil
	b.delivering = false
	b.mu.Unlock()
}

// deliver calls OnStateChange; if it panics, the reporting is handed back
// before the panic goes on, so that later changes are still reported.
func (b *Breaker) deliver(e event) {
	ok := false
	defer func() {
		if !ok {
			b.mu.Lock()
			b.delivering = false
			b.mu.Unlock()
		}
	}()
	b.s.OnStateChange(e.from, e.to, e.counts)
	ok = true
}

// countsLocked returns the counts of the current state. b.mu must be held.
func (b *Breaker) countsLocked() Counts {
	c := Counts{
		Successes:           b.successes.Load(),
		Failures:            b.failures.Load(),
		Ignored:             b.ignored.Load(),
		Rejected:            b.rejected.Load(),
		Slow:                b.slow.Load(),
		ConsecutiveFailures: int64(b.consec.Load() & consecCount),
	}
	c.Requests = c.Successes + c.Failures + c.Ignored
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveSuccesses = max(0, c.Successes-b.successesAtFailure.Load())
	}
	return c
}
