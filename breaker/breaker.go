package breaker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// ErrOpen is the error a refused call matches with errors.Is: the breaker is
// open, or half-open with its trial calls all in flight. The error returned is
// an *OpenError.
var ErrOpen = errors.New("breaker: circuit open")

// An OpenError is returned for a call the breaker refused. Every call refused
// during one opening gets the same *OpenError: refusing allocates nothing.
type OpenError struct {
	Name  string // the breaker's Settings.Name
	State State  // Open, or HalfOpen with every trial slot taken
	// Until is when the open time ends and the breaker lets a trial call
	// through; zero when half-open.
	Until time.Time
}

// RetryAfter returns how long until the breaker lets a trial call through:
// the rest of the open time, or 0 once it is over or when half-open. It reads
// the clock.
func (e *OpenError) RetryAfter() time.Duration {
	if e.Until.IsZero() {
		return 0
	}
	return max(0, time.Until(e.Until))
}

// Error says that the call was refused, and for an open breaker, for how long
// it will refuse calls.
func (e *OpenError) Error() string {
	name := ""
	if e.Name != "" {
		name = " " + e.Name
	}
	if e.State == HalfOpen {
		return "breaker:" + name + " circuit half-open, trial calls in flight"
	}
	return fmt.Sprintf("breaker:%s circuit open, retry after %v", name, e.RetryAfter().Round(time.Millisecond))
}

// Is reports whether target is ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

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

// Metrics are a snapshot of a Breaker for monitoring.
type Metrics struct {
	Name  string
	State State
	// Counts are those of the current state; Total those since New or the
	// last Reset (its consecutive counts are those of Counts).
	Counts, Total Counts
	// WindowCalls is the number of calls in the rate rules' window, and
	// FailureRate and SlowCallRate their percentages of failed and slow
	// calls; -1 when no rate rule is on.
	WindowCalls               int
	FailureRate, SlowCallRate float64
	// Openings is the number of consecutive openings, which OpenBackoff
	// scales the open time by.
	Openings int
	// Disabled reports whether the breaker is disabled (see Disable).
	Disabled bool
}

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

// A Breaker is a circuit breaker: it stops calls to a dependency that keeps
// failing, so that callers fail fast instead of piling up, and probes it back
// to health.
//
// Closed, it lets calls through and watches their outcomes. Enough failures
// (by the rules of its Settings) open it: it then refuses calls at once with
// an *OpenError, for the open time. Once that has passed, the next call finds
// it half-open (there is no timer), and a few trial calls decide: enough
// successes close it, a failure opens it again.
//
// A call that succeeds while the breaker is closed costs no lock, no clock
// read and no allocation (with slow-call tracking off and no rate rule).
//
// The rules judge the calls of the current state alone: a call still running
// when the breaker changes state, or is Reset, shows in Counts when it ends,
// but does not count toward opening or closing the breaker of the new state.
//
// Use New; the zero Breaker is not usable. A Breaker must not be copied after
// first use. It is safe for concurrent use by multiple goroutines.
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
	// clock.
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
	// without the lock; reset with it, at changes of state. A call from
	// before a change can land in the counts after it: the counts are a good
	// view, not a ledger.
	_                                 [64]byte
	failures, ignored, rejected, slow atomic.Int64
	successesAtFailure                atomic.Int64 // successes at the last failure
	_                                 [64]byte
	// successes is striped: in a closed breaker every call adds to it, from
	// every core at once.
	successes stripedCount

	window *window // nil without a rate rule

	mu         sync.Mutex  // guards the fields below, and changes of state
	timer      *time.Timer // marks the current opening expired
	forced     bool        // opened by ForceOpen: stays open until Reset
	openings   int         // consecutive openings
	probes     int         // trial calls in flight
	probeWins  int         // successful trial calls
	total      Counts      // of the states before the current one
	events     []event     // changes of state to report, oldest first
	delivering bool        // a goroutine is calling OnStateChange
}

type event struct {
	from, to State
	counts   Counts
}

// New returns a closed Breaker with the given settings.
//
// New panics if the settings are out of range (a negative duration, a
// percentage outside 0 to 100, a slow-call rate without a slow-call duration).
func New(s Settings) *Breaker {
	b := &Breaker{s: s.normalize()}
	b.halfOpenErr = &OpenError{Name: b.s.Name, State: HalfOpen}
	b.fast = !b.s.rates && b.s.SlowCallDuration == 0
	if b.s.rates {
		b.window = newWindow(b.s)
	}
	return b
}

// Execute runs fn if the breaker lets it, and records its outcome. It returns
// fn's error, or an *OpenError (errors.Is ErrOpen) without calling fn if the
// breaker refuses. A panic in fn counts as a failure and goes on.
//
// A ctx that is already done fails at once with ctx.Err(), without calling fn
// or counting anything.
//
// Execute panics if fn is nil.
func (b *Breaker) Execute(ctx context.Context, fn func(context.Context) error) error {
	if fn == nil {
		panic("breaker: Execute with nil func")
	}
	if err := waitq.CtxErr(ctx, "breaker"); err != nil {
		return err
	}
	s := b.state.Load()
	if b.fast && s&(stateMask|disabledBit) == uint64(Closed) {
		err := b.run(ctx, fn, s, 0)
		if err == nil {
			b.succeeded(s)
			return nil
		}
		b.finish(s, err, false, 0)
		return err
	}
	s, start, err := b.admit(s)
	if err != nil {
		return err
	}
	err = b.run(ctx, fn, s, start)
	b.finish(s, err, true, start)
	return err
}

// Do runs fn through b as Execute does, and returns its result.
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
// call is refused, Allow returns an *OpenError and done is nil.
//
// A ctx that is already done fails at once with ctx.Err().
func (b *Breaker) Allow(ctx context.Context) (done func(err error), err error) {
	if err := waitq.CtxErr(ctx, "breaker"); err != nil {
		return nil, err
	}
	s, start, err := b.admit(b.state.Load())
	if err != nil {
		return nil, err
	}
	var called atomic.Bool
	return func(err error) {
		if called.Swap(true) {
			panic("breaker: done called twice")
		}
		b.finish(s, err, true, start)
	}, nil
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
	b.openErr.Store(&OpenError{Name: b.s.Name, State: Open, Until: clock.Time(until)})
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

// State returns the state of the breaker. An open breaker whose time is up
// reports Open until a call finds it and moves it to HalfOpen.
func (b *Breaker) State() State { return State(b.state.Load() & stateMask) }

// Counts returns the counts of the current state.
func (b *Breaker) Counts() Counts {
	b.mu.Lock()
	defer b.unlock()
	return b.countsLocked()
}

// Metrics returns a snapshot of the breaker.
func (b *Breaker) Metrics() Metrics {
	b.mu.Lock()
	defer b.unlock()
	s := b.state.Load()
	m := Metrics{
		Name:         b.s.Name,
		State:        State(s & stateMask),
		Counts:       b.countsLocked(),
		Total:        b.total,
		FailureRate:  -1,
		SlowCallRate: -1,
		Openings:     b.openings,
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
// Reset.
func (b *Breaker) ForceOpen() {
	b.mu.Lock()
	defer b.unlock()
	b.forced = true
	b.state.Store(b.state.Load() &^ disabledBit)
	if b.State() != Open {
		b.tripLocked()
	}
}

// Reset returns the breaker to its first state: closed and enabled, its counts
// and its window cleared, its consecutive openings forgotten, a ForceOpen or a
// Disable ended.
func (b *Breaker) Reset() {
	b.mu.Lock()
	defer b.unlock()
	b.forced = false
	b.openings = 0
	b.state.Store(b.state.Load() &^ disabledBit)
	b.setStateLocked(Closed) // which clears the window
	b.total = Counts{}
}

// Disable stops the breaker from refusing calls or changing state: it lets
// every call through and keeps counting, for observing what its settings
// would do before trusting them. It closes the breaker first.
func (b *Breaker) Disable() {
	b.mu.Lock()
	defer b.unlock()
	b.forced = false
	if b.State() != Closed {
		b.setStateLocked(Closed)
	}
	b.state.Store(b.state.Load() | disabledBit)
}

// Enable ends Disable: the breaker, closed, applies its rules again.
func (b *Breaker) Enable() {
	b.mu.Lock()
	defer b.unlock()
	b.state.Store(b.state.Load() &^ disabledBit)
}
