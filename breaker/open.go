package breaker

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
)

// trip opens the breaker if it is still in state word s. The length of the
// opening is asked first, without the lock: OpenBackoff is user code, which
// may call the breaker, or panic and leave it as it was.
//
// The number of openings read here is that of state word s if the breaker is
// still in it when the lock is taken: it changes only with the state word.
func (b *Breaker) trip(s uint64) {
	d := b.openDuration(b.openings.Load() + 1)
	b.mu.Lock()
	if b.state.Load() == s {
		b.tripLocked(d)
	}
	b.unlock()
}

// openDuration returns the length of the n'th consecutive opening: OpenTimeout
// or OpenBackoff's, spread by Jitter. It runs OpenBackoff: never call it with
// b.mu held.
func (b *Breaker) openDuration(n int64) time.Duration {
	d := b.s.OpenTimeout
	if b.s.OpenBackoff != nil {
		d = b.s.OpenBackoff(int(n))
		if d < 0 {
			panic(fmt.Sprintf("breaker: OpenBackoff(%d) returned %v, a negative duration", n, d))
		}
	}
	if b.s.Jitter > 0 {
		// Converting a float beyond the range of an int64 gives garbage
		// (math.MinInt64 on amd64: an opening that ended long ago). A
		// duration near the maximum spread upward saturates instead.
		f := float64(d) * (1 + b.s.Jitter*(2*rand.Float64()-1))
		if f >= math.MaxInt64 { // float64(math.MaxInt64) is 2^63: out of range
			d = math.MaxInt64
		} else {
			d = time.Duration(f)
		}
	}
	return d
}

// tripLocked opens the breaker for d. b.mu must be held.
func (b *Breaker) tripLocked(d time.Duration) {
	b.openings.Add(1)
	t := time.Now()
	now := clock.At(t) // clock.Now's reading, from t
	until := now + int64(d)
	if until < now { // d >= 0: the sum wrapped
		until = math.MaxInt64
	}
	// openFor first: openTimeUp reads openUntil first, and so sees an
	// openFor at least as new.
	b.openFor.Store(int64(d))
	b.openUntil.Store(until)
	b.openErr.Store(b.openError(until, d))
	b.setStateLocked(Open)
	gen := b.state.Load() >> stateBits
	switch {
	case b.forced:
		// No end in time: refusals know it from the error, without the
		// clock.
	case inBubble(t):
		// A timer made in a synctest bubble could not be stopped from
		// outside it (the runtime ends the program), and would never fire
		// once the bubble ends: refusals read the clock instead.
		b.markExpired(gen)
	default:
		// A runtime timer, not a goroutine, marks the opening as nearly
		// over, a little before its end. Until it fires, refusals need no
		// clock; after, they read it, so that the end is exact. Made
		// outside any bubble, it may be stopped from inside one.
		b.timer = time.AfterFunc(d-min(d/10, 100*time.Millisecond), func() { b.markExpired(gen) })
	}
}

// inBubble tells whether t, a reading of time.Now, was taken inside a
// synctest bubble: there the runtime gives no monotonic reading, and outside
// one it always does (until the year 2157, when the wall clock outgrows the
// room it shares with the monotonic one; after that this errs only toward
// reading the clock more often). The sign of the clock cannot tell: a bubble's
// clock starts in 2000, below the process's start, but a bubble that has slept
// some decades reads above it.
func inBubble(t time.Time) bool {
	return t == t.Round(0) // Round(0) strips the monotonic reading, if any
}

// markExpired records that the opening of generation gen is nearly over. The
// timer of an earlier opening, stopped too late, may fire after a later one's:
// expired never goes back.
func (b *Breaker) markExpired(gen uint64) {
	for e := b.expired.Load(); e < gen && !b.expired.CompareAndSwap(e, gen); e = b.expired.Load() {
	}
}

// openTimeUp tells whether the open time is up at now. An end further in the
// future than any opening lasts was set on another clock (see internal/clock),
// and counts as up.
func (b *Breaker) openTimeUp(now int64) bool {
	until := b.openUntil.Load()
	if now >= until {
		return true
	}
	// until > now: their difference fits in a uint64, and so does the sum
	// of two values up to math.MaxInt64; neither wraps.
	return uint64(until)-uint64(now) > uint64(b.openFor.Load())+uint64(clock.Jump)
}

// advanceLocked moves an open breaker whose time is up to half-open, so that
// State, Counts and Metrics tell the truth without waiting for a call. b.mu
// must be held.
func (b *Breaker) advanceLocked() {
	s := b.state.Load()
	if s&(stateMask|disabledBit) == uint64(Open) && !b.forced && b.openTimeUp(clock.Now()) {
		b.setStateLocked(HalfOpen)
	}
}

// openError returns the error that refuses calls during an opening of length
// d that ends at until. b.mu must be held.
func (b *Breaker) openError(until int64, d time.Duration) *OpenError {
	if b.forced {
		return &OpenError{Name: b.s.Name, State: Open, Forced: true, openFor: d, made: true}
	}
	return &OpenError{Name: b.s.Name, State: Open, Until: clock.Time(until), openFor: d, made: true}
}
