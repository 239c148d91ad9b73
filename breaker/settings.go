package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// NoThreshold, as Settings.FailureThreshold, turns the consecutive-failure
// rule off. As everywhere in the library, -1 means "none".
const NoThreshold = -1

// Settings configure a Breaker. The zero value of every field means its
// documented default, so Settings{} is a working breaker: five consecutive
// failures open it for 30 seconds, then one trial call decides.
type Settings struct {
	// Name identifies the breaker in errors, in Metrics and in the
	// CallEvents told to OnCall, so that metrics hooks made before the
	// breaker need not be given it again.
	Name string

	// FailureThreshold is the number of consecutive failures that open the
	// breaker. 0 means 5, unless a rate rule (FailureRateThreshold or
	// SlowCallRateThreshold) is set, in which case it means off.
	// NoThreshold (or any negative value) turns the rule off.
	FailureThreshold int

	// FailureRateThreshold opens the breaker when at least this percentage
	// (0 to 100) of the calls in the window failed. 0 turns the rule off.
	FailureRateThreshold float64

	// SlowCallDuration is the duration beyond which a call counts as slow,
	// whatever its outcome. 0 turns slow-call tracking off; with it on, every
	// call reads the clock twice.
	SlowCallDuration time.Duration

	// SlowCallRateThreshold opens the breaker when at least this percentage
	// (0 to 100) of the calls in the window were slow, as Resilience4j does:
	// a dependency that answers, but ever more slowly, is failing too. 0 turns
	// the rule off. It needs SlowCallDuration.
	SlowCallRateThreshold float64

	// WindowSize is the number of most recent calls the rate rules look at
	// (a count-based window), at most 1<<24. 0 means 100. Ignored if
	// WindowDuration is set.
	WindowSize int

	// WindowDuration makes the window time-based: the rate rules look at the
	// calls of the last WindowDuration, counted in WindowBuckets buckets.
	// Each call then reads the clock once.
	WindowDuration time.Duration

	// WindowBuckets is the number of buckets of a time-based window, at
	// most 1<<16. 0 means 10. A bucket lasts WindowDuration/WindowBuckets,
	// rounded up to a whole nanosecond, and the window has as many as it
	// takes to span WindowDuration: so it may span up to a bucket (less
	// 1ns) more than WindowDuration, never less, and a WindowDuration of
	// fewer nanoseconds than WindowBuckets has one bucket per nanosecond.
	// The window moves a bucket at a time: a call leaves it with its
	// bucket, between the span less a bucket and the span after it ended.
	WindowBuckets int

	// MinimumCalls is the number of calls the window must hold before a rate
	// rule may open the breaker. 0 means 10. A count-based window never
	// holds more than WindowSize: above it, WindowSize stands in for it.
	MinimumCalls int

	// OpenTimeout is how long the breaker stays open before it lets trial
	// calls through. 0 means 30 seconds.
	OpenTimeout time.Duration

	// OpenBackoff, if not nil, replaces OpenTimeout: it returns how long the
	// breaker stays open after its n'th consecutive opening (n from 1), so
	// that a dependency that stays down is probed less and less often. See
	// ExponentialBackoff. 0 ends the opening at once; a negative duration
	// is misuse, and panics.
	//
	// It runs outside the breaker's lock, and may call the breaker. It may
	// be called for an opening that a concurrent change of state then
	// preempts, so it should be a pure function of n. If it panics (or
	// returns a negative duration), the panic goes on to the caller whose
	// call would have opened the breaker, and the breaker stays as it was:
	// the failure counts, a trial call gives back its slot.
	OpenBackoff func(n int) time.Duration

	// Jitter spreads each open duration at random by up to this fraction
	// (0 to 1) either way, so that many breakers opened by one outage do not
	// probe it in step. 0 means none.
	Jitter float64

	// HalfOpenMaxCalls is the number of trial calls let through at once when
	// half-open; calls beyond them are refused. 0 means 1.
	HalfOpenMaxCalls int

	// SuccessThreshold is the number of successful trial calls that close
	// the breaker again; any failed one opens it. 0 means HalfOpenMaxCalls.
	SuccessThreshold int

	// IsFailure reports whether an error returned by a call is a failure of
	// the dependency. The default is err != nil. A call whose error is not a
	// failure counts as a success, unless IsIgnored says otherwise.
	//
	// If IsFailure or IsIgnored panics, the call counts as ignored (its
	// outcome is unknown) and gives back its trial slot, and the panic goes
	// on to the caller of Execute, or of Allow's done.
	IsFailure func(err error) bool

	// IsIgnored reports whether a call's error says nothing of the
	// dependency, so that the call counts neither way. The default ignores
	// context.Canceled: the caller gave up, and the dependency is not at
	// fault. (context.DeadlineExceeded is a failure: the dependency was too
	// slow.)
	IsIgnored func(err error) bool

	// OnStateChange, if not nil, is called on every change of state with the
	// counts of the state left. Calls happen outside the breaker's lock, so
	// it may call the breaker, and in the order of the changes, one at a
	// time, by the goroutine whose call made the change (or by the one
	// reporting already). If it panics, the panic goes on to that caller; a
	// call whose move to half-open it was reporting does not go ahead, and
	// gives back its trial slot. Changes queued behind it are reported by
	// the next goroutine to take the breaker's lock (at the latest, at the
	// next change of state).
	OnStateChange func(from, to State, counts Counts)

	// OnCall, if not nil, is told of every call when it ends, or is
	// refused: its outcome, how long it took, its error. It is for metrics
	// (a histogram of call durations, say; Metrics has the counts): it
	// runs outside the breaker's lock, once the outcome is counted, in the
	// goroutine of the call (of done, for Allow), and may call the breaker.
	// With it set, every call let through reads the clock twice. If it
	// panics, the panic goes on to that caller; the breaker has counted
	// the call already and is whole. Calls that panic or whose IsFailure or
	// IsIgnored panics are told as failures, and not told, respectively.
	// A call whose outcome changes the state is told after that change is
	// reported to OnStateChange (unless another goroutine is reporting
	// changes already: then in no set order). A refusal of
	// Transport.Precheck is told as a refusal.
	OnCall func(CallEvent)
}

// ExponentialBackoff returns an OpenBackoff that starts at initial and doubles
// with each consecutive opening, up to max.
//
// ExponentialBackoff panics unless 0 < initial <= max.
func ExponentialBackoff(initial, max time.Duration) func(n int) time.Duration {
	if initial <= 0 || max < initial {
		panic(fmt.Sprintf("breaker: ExponentialBackoff(%v, %v): need 0 < initial <= max", initial, max))
	}
	return func(n int) time.Duration {
		if n <= 1 {
			return initial
		}
		d := float64(initial) * math.Pow(2, float64(n-1))
		if d >= float64(max) {
			return max
		}
		return time.Duration(d)
	}
}

// The largest windows: a count window takes a byte per call, and a time window
// 32 bytes per bucket. Beyond these, memory, not the settings, would decide.
const (
	maxWindowSize    = 1 << 24
	maxWindowBuckets = 1 << 16
)

func defaultIsFailure(err error) bool { return err != nil }

func defaultIsIgnored(err error) bool { return errors.Is(err, context.Canceled) }

// settings are Settings with the defaults filled in, checked.
type settings struct {
	Settings
	consecutive bool // the consecutive-failure rule is on
	rates       bool // a rate rule is on: keep a window
}

// Validate reports what is wrong with s, if anything: a rate threshold that
// is not a percentage, a slow-call rate without a SlowCallDuration, a
// negative duration or count, a Jitter outside 0 to 1, or a window above its
// bound. New panics with the same complaint; a program that reads Settings
// from outside (a file, flags) can call Validate first and report the error.
func (s Settings) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("breaker: bad Settings: "+format, args...)
	}
	switch {
	case s.FailureRateThreshold < 0 || s.FailureRateThreshold > 100 || math.IsNaN(s.FailureRateThreshold):
		return bad("FailureRateThreshold %v is not a percentage", s.FailureRateThreshold)
	case s.SlowCallRateThreshold < 0 || s.SlowCallRateThreshold > 100 || math.IsNaN(s.SlowCallRateThreshold):
		return bad("SlowCallRateThreshold %v is not a percentage", s.SlowCallRateThreshold)
	case s.SlowCallRateThreshold > 0 && s.SlowCallDuration <= 0:
		return bad("SlowCallRateThreshold needs SlowCallDuration")
	case s.SlowCallDuration < 0, s.WindowDuration < 0, s.OpenTimeout < 0:
		return bad("negative duration")
	case s.WindowSize < 0, s.WindowBuckets < 0, s.MinimumCalls < 0, s.HalfOpenMaxCalls < 0, s.SuccessThreshold < 0:
		return bad("negative count")
	case s.Jitter < 0 || s.Jitter > 1 || math.IsNaN(s.Jitter):
		return bad("Jitter %v is not between 0 and 1", s.Jitter)
	case s.WindowSize > maxWindowSize:
		return bad("WindowSize %d is above %d", s.WindowSize, maxWindowSize)
	case s.WindowBuckets > maxWindowBuckets:
		return bad("WindowBuckets %d is above %d", s.WindowBuckets, maxWindowBuckets)
	}
	return nil
}

func (s Settings) normalize() settings {
	if err := s.Validate(); err != nil {
		panic(err.Error())
	}
	n := settings{Settings: s}
	n.rates = s.FailureRateThreshold > 0 || s.SlowCallRateThreshold > 0
	if n.FailureThreshold == 0 && !n.rates {
		n.FailureThreshold = 5
	}
	n.consecutive = n.FailureThreshold > 0
	if n.WindowSize == 0 {
		n.WindowSize = 100
	}
	if n.WindowBuckets == 0 {
		n.WindowBuckets = 10
	}
	if n.MinimumCalls == 0 {
		n.MinimumCalls = 10
	}
	if n.WindowDuration == 0 {
		// Else the rate rules could never open the breaker.
		n.MinimumCalls = min(n.MinimumCalls, n.WindowSize)
	}
	if n.OpenTimeout == 0 {
		n.OpenTimeout = 30 * time.Second
	}
	if n.HalfOpenMaxCalls == 0 {
		n.HalfOpenMaxCalls = 1
	}
	if n.SuccessThreshold == 0 {
		n.SuccessThreshold = n.HalfOpenMaxCalls
	}
	if n.IsFailure == nil {
		n.IsFailure = defaultIsFailure
	}
	if n.IsIgnored == nil {
		n.IsIgnored = defaultIsIgnored
	}
	return n
}
