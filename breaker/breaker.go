package breaker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// State is the state of a Breaker.
type State int

const (
	// Closed lets calls through and watches their outcomes.
	Closed State = iota
	// Open refuses calls at once, until its time is up.
	Open
	// HalfOpen lets a few trial calls through: their outcomes close the
	// breaker or open it again.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Counts are the outcomes of calls since the breaker last changed state.
// Requests counts the calls let through that have finished: Successes +
// Failures + Ignored.
type Counts struct {
	Requests             int64
	Successes            int64
	Failures             int64
	Ignored              int64 // calls whose outcome says nothing of the dependency
	Rejected             int64 // calls refused
	Slow                 int64 // calls slower than SlowCallDuration, whatever their outcome
	ConsecutiveSuccesses int64
	ConsecutiveFailures  int64
}

func (c *Counts) add(o Counts) {
	c.Requests += o.Requests
	c.Successes += o.Successes
	c.Failures += o.Failures
	c.Ignored += o.Ignored
	c.Rejected += o.Rejected
	c.Slow += o.Slow
}

// NoRate is the FailureRate and SlowCallRate of Metrics when no rate rule is
// on: there is no window then. As everywhere in the library, -1 means "none".
const NoRate = -1.0

// Metrics are a snapshot of a Breaker for monitoring.
type Metrics struct {
	Name  string
	State State
	// Counts are those of the current state; Total those since New or the
	// last Reset (its consecutive counts are those of Counts).
	Counts, Total Counts
	// WindowCalls is the number of calls in the rate rules' window, and
	// FailureRate and SlowCallRate their percentages of failed and slow
	// calls; NoRate when no rate rule is on.
	WindowCalls               int
	FailureRate, SlowCallRate float64
	// Openings is the number of consecutive openings, which OpenBackoff
	// scales the open time by.
	Openings int
	// Disabled reports whether the breaker is disabled (see Disable).
	Disabled bool
}

// A Breaker is a circuit breaker: it stops calls to a dependency that keeps
// failing, so that callers fail fast instead of piling up, and probes it back
// to health.
//
// Closed, it lets calls through and watches their outcomes. Enough failures
// (by the rules of its Settings) open it: it then refuses calls at once with
// an *OpenError, for the open time. Once that has passed, it is half-open: the
// next call, or State, Counts or Metrics, finds it so and moves it there
// (nothing runs in the background), and a few trial calls decide: enough
// successes close it, a failure opens it again. An open time near
// math.MaxInt64 keeps it open for good: the end saturates, never wraps.
//
// A call that succeeds while the breaker is closed costs no lock, no clock
// read and no allocation (with slow-call tracking off and no rate rule).
//
// The rules judge the calls of the current state alone: a call still running
// when the breaker changes state, or is Reset, shows in Counts and Metrics
// when it ends, whatever state it started in (a trial call included), but
// does not count toward opening or closing the breaker of the new state.
//
// No user function (IsFailure, IsIgnored, OnStateChange, OpenBackoff, the
// call itself) runs under the breaker's lock. If one panics, the panic goes
// on to the caller that ran it, and the breaker keeps no trial slot and no
// lock: see Settings for how each such call counts.
//
// A Breaker made outside a testing/synctest bubble works inside one, and one
// made inside works after the bubble ends: an opening set on the other
// clock counts as over (unless it was set to last for decades). A breaker
// opened outside and used inside may refuse some 64 calls before a refusal
// reads the clock and finds that out; State finds it at once.
//
// Use New: the zero Breaker panics at first use. A Breaker must not be copied
// after first use. It is safe for concurrent use by multiple goroutines.
type Breaker struct {
	_ nocopy.NoCopy
	s settings

	// fast reports that a closed breaker needs nothing but the counts: no
	// window, no clock.
	fast bool

	state     atomic.Uint64 // see the state word
	openUntil atomic.Int64  // on clock: when Open ends
	openFor   atomic.Int64  // the length of the current opening

	// expired holds the generation of the last opening whose time is nearly
	// up, set by its timer, so that a refusal before then need not read the
	// clock. It only grows.
	expired atomic.Uint64
	// openErr is the error of the current opening; halfOpenErr that of a
	// half-open breaker with its trial slots taken.
	openErr     atomic.Pointer[OpenError]
	halfOpenErr *OpenError

	// consec is the consecutive failures of the current generation of the
	// state word: its generation (the low 32 bits) << consecShift | the
	// count. Read by every success, written by failures. A call admitted in
	// an earlier generation finds another tag there, and leaves it alone.
	consec atomic.Uint64

	// The counts of the current state, on cache lines of their own: written
	// by every call, they must not share one with the state word that every
	// call reads, or cores would steal the line from each other. Counted
	// without the lock; taken into total with it, at changes of state, each
	// by a swap, so that every outcome lands in the counts of one state (a
	// call from before a change in those after it) and total misses none.
	_                                 [64]byte
	failures, ignored, rejected, slow atomic.Int64
	successesAtFailure                atomic.Int64 // successes at the last failure
	_                                 [64]byte
	// successes is striped: in a closed breaker every call adds to it, from
	// every core at once.
	successes stripedCount

	window *window // nil without a rate rule

	// openings is the number of consecutive openings. Written with mu
	// held; read without it to ask OpenBackoff, outside the lock, for the
	// length of the next opening.
	openings atomic.Int64

	mu         sync.Mutex  // guards the fields below, and changes of state
	timer      *time.Timer // marks the current opening expired; never one of a synctest bubble
	forced     bool        // opened by ForceOpen: stays open until Reset
	probes     int         // trial calls in flight
	probeWins  int         // successful trial calls
	total      Counts      // of the states before the current one
	events     []event     // changes of state to report, oldest first
	delivering bool        // a goroutine is calling OnStateChange
}

// New returns a closed Breaker with the given settings.
//
// New panics if the settings are out of range (a negative duration, a
// percentage outside 0 to 100, a slow-call rate without a slow-call duration):
// see Settings.Validate, which returns the same complaint as an error.
func New(s Settings) *Breaker {
	b := &Breaker{s: s.normalize()}
	b.halfOpenErr = &OpenError{Name: b.s.Name, State: HalfOpen}
	b.fast = !b.s.rates && b.s.SlowCallDuration == 0 && b.s.OnCall == nil
	if b.s.rates {
		b.window = newWindow(b.s)
	}
	return b
}

// Execute runs fn if the breaker lets it, and records its outcome. It returns
// fn's error, or an *OpenError (errors.Is ErrOpen) without calling fn if the
// breaker refuses. A panic in fn counts as a failure and goes on.
//
// An error of fn that is the cause its ctx ended with (context.WithCancelCause,
// a group's first failure; net/http fails a request so) is judged as the
// ctx's end: Settings' functions see an error that matches both the cause and
// ctx.Err(), so that a call the caller gave up on is ignored by default, as
// one that returns context.Canceled is. Execute still returns fn's error. If
// ctx panics as Execute looks at it then, fn's error is judged as it is, and
// the panic goes on.
//
// A ctx that is already done fails at once with ctx.Err(), without calling fn
// or counting anything.
//
// Execute panics if fn is nil.
func (b *Breaker) Execute(ctx context.Context, fn func(context.Context) error) error {
	if fn == nil {
		panic("breaker: Execute with nil func")
	}
	// The zero Breaker panics even with a done ctx: misuse shows at its
	// first use, not at the first use whose ctx is still live.
	b.check()
	if err := waitq.CtxErr(ctx, "breaker"); err != nil {
		return err
	}
	s := b.state.Load()
	var start int64
	fast := b.fast && s&(stateMask|disabledBit) == uint64(Closed)
	if !fast {
		var err error
		if s, start, err = b.admit(s); err != nil {
			if b.s.OnCall != nil {
				b.reportRefusal(err)
			}
			return err
		}
	}
	// If fn panics, the deferred call records a failure and lets the panic
	// go on. (Written here rather than in a helper: a call fewer on the fast
	// path.)
	ok := false
	returned := error(errPanic)
	defer func() {
		if !ok {
			b.finish(s, returned, true, start)
		}
	}()
	err := fn(ctx)
	judged := err
	if err != nil {
		// ctx is the caller's code: if it panics, fn's error is judged
		// as it is, as Allow's done does. fn returned: counted as its
		// panic, a bug of one caller's ctx would be a failure of the
		// dependency, and could open the breaker for every caller.
		returned = err
		judged = endedBy(ctx, err)
	}
	ok = true
	if fast && err == nil {
		b.succeeded(s)
		return nil
	}
	b.finish(s, judged, !fast, start)
	return err
}

// endedBy returns err, the error of a call made with ctx, as the breaker is
// to judge it: a *causeError if ctx has ended and err is the cause it ended
// with, else err. A caller's ctx cancelled with a cause fails a request in
// net/http with that cause, not context.Canceled: judged as it is, the
// caller giving up would count as a failure of the dependency.
func endedBy(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if cerr == nil || errors.Is(err, cerr) {
		return err
	}
	if cause := context.Cause(ctx); cause == nil || cause == cerr || !errors.Is(err, cause) {
		return err
	}
	return &causeError{err: err, ended: cerr}
}

// causeError is the error the breaker judges for a call that failed with
// the cause of its ctx's end: it matches both, so that the default
// IsIgnored ignores a cancellation, and a user's IsIgnored or IsFailure
// still finds the cause. Execute returns err itself.
type causeError struct{ err, ended error }

func (e *causeError) Error() string   { return e.err.Error() }
func (e *causeError) Unwrap() []error { return []error{e.err, e.ended} }

// Do runs fn through b as Execute does, and returns its result.
//
// The functions of b's Settings run after fn has returned (IsFailure and
// IsIgnored judge its error, OnStateChange hears of the change it makes,
// OnCall of its outcome). If one of them panics, or calls runtime.Goexit,
// Do never returns, and fn's value is dropped: a value that must be closed
// (a connection fn opened) is then lost to the caller, who should note it
// in fn and close it on the way out, as pool.Config.Breaker's pool does.
func Do[T any](ctx context.Context, b *Breaker, fn func(context.Context) (T, error)) (T, error) {
	if fn == nil {
		panic("breaker: Do with nil func")
	}
	var v T
	err := b.Execute(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	return v, err
}

// Allow is the two-step form of Execute, for code that cannot wrap the call in
// a function: it asks whether a call may go ahead, and if so returns done,
// which must be called exactly once with the call's error when it ends. If the
// call is refused, Allow returns an *OpenError and done is nil. done judges
// an error that is the cause ctx ended with as Execute does: as ctx's end.
//
// A ctx that is already done fails at once with ctx.Err().
func (b *Breaker) Allow(ctx context.Context) (done func(err error), err error) {
	b.check() // before ctx, as in Execute
	if err := waitq.CtxErr(ctx, "breaker"); err != nil {
		return nil, err
	}
	s, start, err := b.admit(b.state.Load())
	if err != nil {
		if b.s.OnCall != nil {
			b.reportRefusal(err)
		}
		return nil, err
	}
	var called atomic.Bool
	return func(err error) {
		if called.Swap(true) {
			panic("breaker: done called twice")
		}
		judged := err
		if err != nil {
			// ctx is the caller's code: if it panics, the call is
			// judged by its error as it is, and the panic goes on.
			looked := false
			defer func() {
				if !looked {
					b.finish(s, err, true, start)
				}
			}()
			judged = endedBy(ctx, err)
			looked = true
		}
		b.finish(s, judged, true, start)
	}, nil
}

// State returns the state of the breaker at the moment of the call. An open
// breaker whose time is up is half-open, whether or not a call has come
// since: State moves it there (reporting the change to OnStateChange, once),
// as the next call would. For that, State reads the clock when the breaker is
// open, and not forced open.
func (b *Breaker) State() State {
	b.check()
	s := b.state.Load()
	if s&(stateMask|disabledBit) == uint64(Open) && !b.openErr.Load().Forced && b.openTimeUp(clock.Now()) {
		b.mu.Lock()
		b.advanceLocked()
		s = b.state.Load()
		b.unlock()
	}
	return State(s & stateMask)
}

// Counts returns the counts of the current state. An open breaker whose time
// is up moves to half-open first, as with State.
func (b *Breaker) Counts() Counts {
	b.check()
	b.mu.Lock()
	defer b.unlock()
	b.advanceLocked()
	return b.countsLocked()
}

// Metrics returns a snapshot of the breaker. An open breaker whose time is up
// moves to half-open first, as with State.
func (b *Breaker) Metrics() Metrics {
	b.check()
	b.mu.Lock()
	defer b.unlock()
	b.advanceLocked()
	s := b.state.Load()
	m := Metrics{
		Name:         b.s.Name,
		State:        State(s & stateMask),
		Counts:       b.countsLocked(),
		Total:        b.total,
		FailureRate:  NoRate,
		SlowCallRate: NoRate,
		Openings:     int(b.openings.Load()),
		Disabled:     s&disabledBit != 0,
	}
	m.Total.add(m.Counts)
	m.Total.ConsecutiveFailures = m.Counts.ConsecutiveFailures
	m.Total.ConsecutiveSuccesses = m.Counts.ConsecutiveSuccesses
	if b.window != nil {
		calls, failures, slows := b.window.totals(clock.Now())
		m.WindowCalls = calls
		if calls > 0 {
			m.FailureRate = 100 * float64(failures) / float64(calls)
			m.SlowCallRate = 100 * float64(slows) / float64(calls)
		} else {
			m.FailureRate, m.SlowCallRate = 0, 0
		}
	}
	return m
}

// ForceOpen opens the breaker and keeps it open, refusing every call, until
// Reset: for maintenance, say. The *OpenError of its refusals has Forced set.
//
// The length of the opening (OpenTimeout, or OpenBackoff's), but at least a
// second, sets the pace that RetryAfter suggests: until Reset, nobody knows
// when the breaker lets calls through again.
func (b *Breaker) ForceOpen() {
	b.check()
	var d time.Duration
	for {
		// OpenBackoff is user code: ask it before taking the lock, for
		// the openings there are then, and again if they changed meanwhile.
		n := b.openings.Load() + 1
		d = b.openDuration(n)
		b.mu.Lock()
		if b.openings.Load()+1 == n {
			break
		}
		b.mu.Unlock() // nothing changed here: nothing to report
	}
	defer b.unlock()
	b.forced = true
	b.state.Store(b.state.Load() &^ disabledBit)
	if State(b.state.Load()&stateMask) != Open {
		b.tripLocked(d)
		return
	}
	// Open already: keep the opening, with refusals that say it is forced.
	b.openErr.Store(b.openError(b.openUntil.Load(), time.Duration(b.openFor.Load())))
}

// Reset returns the breaker to its first state: closed and enabled, its counts
// and its window cleared, its consecutive openings forgotten, a ForceOpen or a
// Disable ended.
func (b *Breaker) Reset() {
	b.check()
	b.mu.Lock()
	defer b.unlock()
	b.forced = false
	b.openings.Store(0)
	b.state.Store(b.state.Load() &^ disabledBit)
	b.setStateLocked(Closed) // which clears the window
	b.total = Counts{}
}

// Disable stops the breaker from refusing calls or changing state: it lets
// every call through and keeps counting, for observing what its settings
// would do before trusting them. It closes the breaker first.
func (b *Breaker) Disable() {
	b.check()
	b.mu.Lock()
	defer b.unlock()
	b.forced = false
	if State(b.state.Load()&stateMask) != Closed {
		b.setStateLocked(Closed)
	}
	b.state.Store(b.state.Load() | disabledBit)
}

// Enable ends Disable: the breaker, closed, applies its rules again.
func (b *Breaker) Enable() {
	b.check()
	b.mu.Lock()
	defer b.unlock()
	b.state.Store(b.state.Load() &^ disabledBit)
}
