package breaker

import (
	"errors"
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

// useNew is the panic of a zero Breaker at first use.
const useNew = "breaker: use New to make a Breaker"

// check panics if b is the zero Breaker, which New did not fill in, or nil
// (a field never set, say), rather than dereference it. It reads a field New
// sets once, so it costs no synchronization.
func (b *Breaker) check() {
	if b == nil || b.halfOpenErr == nil {
		panic(useNew)
	}
}

// admit decides, on the slow path, whether a call may go ahead, the breaker's
// state word having been s. It returns the state word the call is admitted
// under (an open breaker may have become half-open), and the call's start
// time if slow calls are tracked.
func (b *Breaker) admit(s uint64) (admitted uint64, start int64, err error) {
	b.check()
	st := State(s & stateMask)
	if s&disabledBit == 0 && st == Open {
		// Refuse without the lock, and without the clock while the open
		// time runs: a forced opening has no end, and the opening's timer
		// marks when the end nears (see tripLocked). About every
		// refusalCheck refusals, read the clock anyway, in case that timer
		// cannot tell: the opening was set on another clock. Near the end,
		// read it, and refuse still without the lock until the end.
		e := b.openErr.Load()
		if e.Forced ||
			b.expired.Load() < s>>stateBits && b.rejected.Load()%refusalCheck != refusalCheck-1 ||
			!b.openTimeUp(clock.Now()) {
			b.rejected.Add(1)
			return 0, 0, e
		}
	}
	if s&disabledBit == 0 && st != Closed {
		b.mu.Lock()
		s, err = b.admitLocked()
		if err != nil {
			b.unlockRefused(err)
			return 0, 0, err
		}
		b.unlockAdmitted(s)
	}
	if b.s.SlowCallDuration > 0 || b.s.OnCall != nil {
		start = clock.Now()
	}
	return s, start, nil
}

// admitLocked decides for an open or half-open breaker, moving it from open to
// half-open if its time is up, and takes a trial slot. It returns the state
// word the call is admitted under. b.mu must be held.
func (b *Breaker) admitLocked() (uint64, error) {
	b.advanceLocked()
	s := b.state.Load()
	if s&disabledBit != 0 {
		return s, nil
	}
	switch State(s & stateMask) {
	case Open:
		b.rejected.Add(1)
		return 0, b.openErr.Load()
	case HalfOpen:
		if b.probes >= b.s.HalfOpenMaxCalls {
			b.rejected.Add(1)
			return 0, b.halfOpenErr
		}
		b.probes++
	}
	return s, nil
}

// unlockAdmitted unlocks b.mu for a call just admitted in state word s.
// Unlocking reports the changes of state queued meanwhile (this call's move
// to half-open, say) to OnStateChange, which is user code: if it panics, the
// call does not go ahead, and gives back the trial slot it took.
func (b *Breaker) unlockAdmitted(s uint64) {
	if len(b.events) == 0 {
		b.mu.Unlock()
		return
	}
	ok := false
	defer func() {
		if !ok && s&(stateMask|disabledBit) == uint64(HalfOpen) {
			b.mu.Lock()
			if b.state.Load() == s {
				b.probes--
			}
			// A plain unlock: this queued no change, and the changes
			// others queued wait for the next unlock rather than run
			// OnStateChange again in the middle of its panic.
			b.mu.Unlock()
		}
	}()
	b.unlock()
	ok = true
}

// unlockRefused unlocks b.mu for a call just refused with err, and counted.
// Unlocking reports the changes of state queued meanwhile (left by an
// OnStateChange that panicked, say) to OnStateChange, which is user code: if
// it panics, the refusal is told to OnCall before the panic goes on, since
// the caller that would tell it will not.
func (b *Breaker) unlockRefused(err error) {
	if len(b.events) == 0 || b.s.OnCall == nil {
		b.unlock()
		return
	}
	ok := false
	defer func() {
		if !ok {
			b.reportRefusal(err)
		}
	}()
	b.unlock()
	ok = true
}

// refusalCheck is how often a refusal reads the clock, in case the timer of
// the opening cannot fire.
const refusalCheck = 64

// finish records the outcome of a call admitted in state word s. admitted
// reports that the call went through admit (and holds a trial slot if s was
// half-open).
func (b *Breaker) finish(s uint64, err error, admitted bool, start int64) {
	trial := admitted && s&(stateMask|disabledBit) == uint64(HalfOpen)
	failure, ignored := true, false
	switch err.(type) {
	case *mistakeError:
		// A mistake in the configuration of a Transport under
		// Transport, not an outcome of the host (see Transport.RoundTrip):
		// no function of the user's judges it.
		failure, ignored = false, true
	default:
		if err != errPanic {
			failure, ignored = b.judge(s, err, trial)
		}
	}
	slow := false
	var now int64
	if b.s.SlowCallDuration > 0 || b.s.OnCall != nil || b.window != nil && b.window.buckets != nil {
		now = clock.Now()
		slow = b.s.SlowCallDuration > 0 && now-start > int64(b.s.SlowCallDuration)
	}
	if b.s.OnCall != nil {
		// Told once counted: deferred, it runs after the lock of a trial
		// or of an opening is released.
		o := Success
		switch {
		case ignored:
			o = Ignored
		case failure:
			o = Failure
		}
		ev := err
		if c, ok := err.(*causeError); ok {
			ev = c.err // the call's own error, as CallEvent.Err says
		}
		defer b.s.OnCall(CallEvent{Name: b.s.Name, Outcome: o, State: State(s & stateMask), Duration: time.Duration(max(0, now-start)), Err: ev})
	}
	if slow {
		b.slow.Add(1)
	}
	if trial {
		b.finishTrial(s, failure, ignored)
		return
	}
	st := State(s & stateMask)
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
			b.trip(s)
		}
	}
}

// judge tells whether err, the error of a call admitted in state word s, is a
// failure, or ignored. IsIgnored and IsFailure are user code: if one panics,
// the call counts as ignored, since its outcome is unknown, it gives back its
// trial slot, and the panic goes on.
func (b *Breaker) judge(s uint64, err error, trial bool) (failure, ignored bool) {
	ok := false
	defer func() {
		if ok {
			return
		}
		if !trial {
			b.ignored.Add(1)
			return
		}
		b.mu.Lock()
		b.finishTrialLocked(s, false, true, noOpening)
		b.mu.Unlock() // an ignored trial changes no state: nothing to report
	}()
	if err != nil && b.s.IsIgnored(err) {
		ignored = true
	} else {
		failure = b.s.IsFailure(err)
	}
	ok = true
	return failure, ignored
}

// failed records a failure of a call admitted in state word s, outside
// half-open, and opens a closed breaker if the consecutive-failure rule says
// so. A failure of an earlier generation than the current one counts in
// Counts only.
func (b *Breaker) failed(s uint64) {
	b.failures.Add(1)
	tag := consecTag(s)
	var n uint64
	for {
		c := b.consec.Load()
		if c&^consecCount != tag {
			return
		}
		b.successesAtFailure.Store(b.successes.Load())
		if c&consecCount == consecCount {
			// Saturated: one more would carry into the tag. No threshold
			// above this count can be reached (a disabled breaker or one
			// without the rule counts on, though).
			n = consecCount
			break
		}
		if b.consec.CompareAndSwap(c, c+1) {
			n = c + 1 - tag
			break
		}
	}
	if b.s.consecutive && n >= uint64(b.s.FailureThreshold) && s&(stateMask|disabledBit) == uint64(Closed) {
		b.trip(s)
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

// finishTrial records the outcome of a trial call admitted in state word s,
// and gives back its slot.
func (b *Breaker) finishTrial(s uint64, failure, ignored bool) {
	d := time.Duration(noOpening)
	if failure {
		// A failed trial opens the breaker again, for a time that
		// OpenBackoff, user code, may tell: ask before taking the lock. If
		// it panics, the failure counts but opens nothing, the slot comes
		// back, and the panic goes on.
		ok := false
		defer func() {
			if !ok {
				b.mu.Lock()
				b.finishTrialLocked(s, true, false, noOpening)
				b.mu.Unlock() // no change of state: nothing to report
			}
		}()
		d = b.openDuration(b.openings.Load() + 1)
		ok = true
	}
	b.mu.Lock()
	b.finishTrialLocked(s, failure, ignored, d)
	b.unlock()
}

// noOpening, as the length of the next opening, says that a failed trial
// must not open the breaker: the length is unknown.
const noOpening = -1

// finishTrialLocked records the outcome of a trial call admitted in state
// word s; a failure opens the breaker for d. b.mu must be held.
func (b *Breaker) finishTrialLocked(s uint64, failure, ignored bool, d time.Duration) {
	if b.state.Load() != s {
		// The breaker changed state since: the call's slot went with the
		// state, and its outcome counts in Counts alone.
		switch {
		case ignored:
			b.ignored.Add(1)
		case failure:
			b.failures.Add(1)
		default:
			b.successes.Add(1)
		}
		return
	}
	b.probes--
	switch {
	case ignored:
		b.ignored.Add(1)
	case failure:
		b.failures.Add(1)
		if c := b.consec.Load(); c&consecCount != consecCount {
			b.consec.Store(c + 1)
		}
		b.successesAtFailure.Store(b.successes.Load())
		if d != noOpening {
			b.tripLocked(d)
		}
	default:
		b.successes.Add(1)
		b.consec.Store(consecTag(s))
		b.probeWins++
		if b.probeWins >= b.s.SuccessThreshold {
			b.openings.Store(0)
			b.setStateLocked(Closed)
		}
	}
}
