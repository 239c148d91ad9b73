package breaker

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// breakerModel is what a Breaker should be, with the consecutive-failure rule
// and, if set, the failure-rate and slow-call-rate rules over a count window.
// gen counts changes of state (and Resets): a call's outcome counts for the
// rules only in the generation that admitted it, but in counts whenever it
// ends.
type breakerModel struct {
	threshold, maxTrials, successes int // threshold 0: the rule is off
	openTimeout                     time.Duration
	backoff                         bool // open for openings × openTimeout
	forever                         bool // open for math.MaxInt64
	failureRate, slowRate           bool // the rate rules: 50% of at least minCalls
	slowCall                        time.Duration

	state       State
	gen         int
	consecutive int       // failures in a row, closed
	window      []outcome // the last windowSize outcomes, closed
	until       time.Time // open
	forced      bool
	openings    int      // consecutive openings
	trials      int      // half-open: calls in flight
	wins        int      // half-open: calls that succeeded
	counts      Counts   // but for the consecutive ones
	winsInARow  int      // successes since the last failure of this state
	moves       []string // the changes of state, as OnStateChange reports them
}

type outcome struct{ failed, slow bool }

// The rate rules' settings in the fuzz target.
const (
	windowSize = 4
	minCalls   = 2
)

// ratesTrip reports whether the window's outcomes open the breaker.
func (m *breakerModel) ratesTrip() bool {
	if len(m.window) < minCalls {
		return false
	}
	failed, slow := 0, 0
	for _, o := range m.window {
		if o.failed {
			failed++
		}
		if o.slow {
			slow++
		}
	}
	return m.failureRate && 2*failed >= len(m.window) || m.slowRate && 2*slow >= len(m.window)
}

// observe moves an open breaker whose time is up to half-open: State,
// Counts and Metrics tell the truth without waiting for a call.
func (m *breakerModel) observe(now time.Time) {
	if m.state == Open && !m.forced && !now.Before(m.until) {
		m.move(HalfOpen, now)
	}
}

// admit decides on a call at now: the generation it is admitted in, or the
// state it is refused in.
func (m *breakerModel) admit(now time.Time) (gen int, refused State, ok bool) {
	m.observe(now)
	if m.state == Open {
		m.counts.Rejected++
		return 0, Open, false
	}
	if m.state == HalfOpen {
		if m.trials == m.maxTrials {
			m.counts.Rejected++
			return 0, HalfOpen, false
		}
		m.trials++
	}
	return m.gen, 0, true
}

// errBadPredicate makes the fuzz target's IsFailure panic: the call counts
// as ignored.
func isIgnored(err error) bool {
	_, mistake := err.(*mistakeError) // Transport's: see finish
	return mistake || errors.Is(err, context.Canceled) || errors.Is(err, errBadPredicate)
}

// finish records the outcome of a call admitted in generation gen at start.
func (m *breakerModel) finish(gen int, err error, start, now time.Time) {
	ignored, failed := isIgnored(err), err != nil
	slow := m.slowCall > 0 && now.Sub(start) > m.slowCall
	if slow {
		m.counts.Slow++
	}
	m.counts.Requests++
	switch {
	case ignored:
		m.counts.Ignored++
	case failed:
		m.counts.Failures++
	default:
		m.counts.Successes++
		m.winsInARow++ // a late one too: it is a success since the last failure
	}
	if gen != m.gen {
		return // admitted before a change of state: counts only
	}
	if failed && !ignored {
		m.winsInARow = 0
	}
	switch m.state {
	case Closed:
		if ignored {
			return
		}
		if failed {
			if m.consecutive++; m.threshold > 0 && m.consecutive >= m.threshold {
				m.move(Open, now)
				return
			}
		} else {
			m.consecutive = 0
		}
		if m.failureRate || m.slowRate {
			if m.window = append(m.window, outcome{failed, slow}); len(m.window) > windowSize {
				m.window = m.window[1:]
			}
			if m.ratesTrip() {
				m.move(Open, now)
			}
		}
	case HalfOpen:
		m.trials--
		switch {
		case ignored:
		case failed:
			m.move(Open, now)
		default:
			if m.wins++; m.wins >= m.successes {
				m.openings = 0
				m.move(Closed, now)
			}
		}
	}
}

// wantCounts returns the counts Counts should return.
func (m *breakerModel) wantCounts() Counts {
	c := m.counts
	c.ConsecutiveFailures = int64(m.consecutive)
	if m.consecutive == 0 {
		c.ConsecutiveSuccesses = int64(m.winsInARow)
	}
	return c
}

func (m *breakerModel) move(to State, now time.Time) {
	if m.state != to {
		m.moves = append(m.moves, m.state.String()+">"+to.String())
	}
	m.state = to
	m.gen++
	m.consecutive, m.trials, m.wins, m.window = 0, 0, 0, nil
	m.counts, m.winsInARow = Counts{}, 0
	if to == Open {
		m.openings++
		switch {
		case m.forever:
			m.until = now.AddDate(200, 0, 0)
		case m.backoff:
			m.until = now.Add(time.Duration(m.openings) * m.openTimeout)
		default:
			m.until = now.Add(m.openTimeout)
		}
	}
}

// A call is one Execute in flight, blocked in its func until the script
// finishes it.
type call struct {
	gen    int       // in the model
	start  time.Time // when it was admitted
	state  State     // and in which state
	finish chan error
	res    chan error
}

// FuzzBreakerModel runs a script of calls, some finishing at once and some
// held in flight (some of those ending with the mistake of a Transport under
// Transport, which counts as ignored), some panicking in their func or in
// IsFailure, with the
// passing of virtual time, ForceOpen and Reset, against breakerModel, with
// settings from the first byte and rate rules and open times (a backoff that
// calls the breaker back, an open time of math.MaxInt64) from the second:
// after each step, every call's outcome (its func's error, or a refusal in
// the state the model says), State, Counts and the changes reported to
// OnStateChange, which calls the breaker back. Each step is two bytes: an
// operation and its argument.
func FuzzBreakerModel(f *testing.F) {
	// Three failures open it; the open time ends; one trial closes it.
	f.Add(uint8(0x12), uint8(0), []byte{1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 4, 3, 0, 0, 4, 1, 0, 0, 0, 0})
	// Two trials at once, a third refused; a failed trial opens it again.
	f.Add(uint8(0x25), uint8(0), []byte{1, 0, 1, 0, 4, 4, 2, 0, 2, 0, 2, 0, 3, 0, 3, 1, 0, 0, 4, 4, 2, 0, 3, 0, 2, 0, 3, 0})
	// Calls in flight across a change of state count for nothing after it;
	// ForceOpen holds until Reset; a canceled call counts neither way.
	f.Add(uint8(0x11), uint8(0), []byte{2, 0, 2, 0, 1, 0, 1, 0, 4, 4, 0, 0, 3, 1, 3, 1, 0, 0, 5, 0, 4, 7, 0, 0, 6, 0, 2, 0, 3, 2, 1, 0})
	// The failure rate: half of at least two of the last four calls, with
	// the consecutive rule off; the window starts afresh when it closes.
	f.Add(uint8(0x03), uint8(0b101), []byte{0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 4, 4, 0, 0, 1, 0, 0, 0})
	// Slow calls: a call of exactly the slow-call duration is not slow, one
	// of twice it is; half of the window slow opens it.
	f.Add(uint8(0x03), uint8(0b110), []byte{2, 0, 4, 1, 3, 0, 2, 0, 4, 2, 3, 0, 0, 0, 2, 0, 4, 2, 3, 0})
	f.Add(uint8(0x01), uint8(0b011), []byte{2, 0, 2, 0, 1, 0, 4, 1, 3, 0, 4, 1, 3, 0, 0, 0, 1, 0, 0, 0})
	f.Add(uint8(0x03), uint8(0b110), []byte{2, 0, 4, 1, 3, 0, 0, 0})
	// The window holds the last four: the first of five leaves it.
	f.Add(uint8(0x03), uint8(0b101), []byte{0, 0, 0, 0, 0, 0, 1, 0, 1, 0})
	// A late trial: two trials, the first closes it, the second fails
	// after, and shows in Counts.
	f.Add(uint8(0x04), uint8(0), []byte{1, 0, 4, 4, 2, 0, 2, 0, 3, 0, 3, 1, 0, 0})
	// Panics in the func and in IsFailure, half-open: the slot comes back.
	f.Add(uint8(0x00), uint8(0), []byte{1, 0, 4, 4, 8, 0, 0, 0, 1, 0, 4, 4, 7, 0, 4, 4, 0, 0})
	// Trials that meet a mistake under a Transport give their slots back.
	f.Add(uint8(0x04), uint8(0), []byte{1, 0, 4, 4, 2, 0, 2, 0, 3, 0x80, 3, 0x80, 2, 0, 3, 0, 1, 0, 2, 0, 3, 0x81})
	// Open for math.MaxInt64: it stays open, however long the wait.
	f.Add(uint8(0x00), uint8(0b1000), []byte{1, 0, 4, 7, 0, 0, 4, 7, 0, 0, 6, 0, 0, 0})
	// A backoff: each consecutive opening is a second longer; State moves
	// the breaker to half-open with no call.
	f.Add(uint8(0x00), uint8(0b10000), []byte{1, 0, 4, 4, 1, 0, 4, 4, 0, 0, 4, 7, 4, 1, 0, 0, 5, 0, 6, 0})
	f.Fuzz(runBreakerScript)
}

// runBreakerScript is the body of FuzzBreakerModel.
func runBreakerScript(t *testing.T, settingsB, rulesB uint8, script []byte) {
	{
		synctest.Test(t, func(t *testing.T) {
			m := &breakerModel{
				threshold:   1 + int(settingsB&3),
				maxTrials:   1 + int(settingsB>>2&3)%3,
				successes:   1 + int(settingsB>>4&3),
				openTimeout: time.Second,
				failureRate: rulesB&1 != 0,
				slowRate:    rulesB&2 != 0,
				forever:     rulesB&8 != 0,
				backoff:     rulesB&8 == 0 && rulesB&16 != 0,
			}
			var b *Breaker
			var tr transitions
			var calls callEvents // what OnCall is told, against want
			var want []CallEvent
			// A name from the script, its bytes as they come: every event
			// carries it unchanged.
			name := string(script[:min(len(script), 2)])
			outcome := func(err error) Outcome {
				switch {
				case isIgnored(err):
					return Ignored
				case err != nil:
					return Failure
				}
				return Success
			}
			s := Settings{
				Name:             name,
				OnCall:           calls.add,
				FailureThreshold: m.threshold,
				HalfOpenMaxCalls: m.maxTrials,
				SuccessThreshold: m.successes,
				OpenTimeout:      m.openTimeout,
				WindowSize:       windowSize,
				MinimumCalls:     minCalls,
				IsFailure:        panickyIsFailure,
				OnStateChange: func(from, to State, c Counts) {
					_ = b.Counts() // a callback may call the breaker
					tr.record(from, to, c)
				},
			}
			if m.forever {
				s.OpenTimeout = math.MaxInt64
			}
			if m.backoff {
				s.OpenBackoff = func(n int) time.Duration {
					_ = b.Counts() // it runs outside the lock
					return time.Duration(n) * m.openTimeout
				}
			}
			if m.failureRate {
				s.FailureRateThreshold = 50
			}
			if m.slowRate {
				m.slowCall = m.openTimeout / 4
				s.SlowCallDuration, s.SlowCallRateThreshold = m.slowCall, 50
			}
			if (m.failureRate || m.slowRate) && rulesB&4 != 0 {
				m.threshold, s.FailureThreshold = 0, -1
			}
			b = New(s)
			ctx := t.Context()
			var inFlight []*call
			refusedIn := func(err error) State {
				var oe *OpenError
				require.ErrorAs(t, err, &oe)
				return oe.State
			}
			for ; len(script) >= 2; script = script[2:] {
				op, arg := script[0]%9, int(script[1])
				switch op {
				case 0, 1: // a call that succeeds or fails at once
					var fnErr error
					if op == 1 {
						fnErr = errBoom
					}
					gen, state, ok := m.admit(time.Now())
					in := m.state
					err := b.Execute(ctx, func(context.Context) error { return fnErr })
					if !ok {
						require.Equal(t, state, refusedIn(err), "refused in")
						want = append(want, CallEvent{Name: name, Outcome: Rejected, State: state, Err: err})
						break
					}
					require.Equal(t, fnErr, err)
					m.finish(gen, fnErr, time.Now(), time.Now())
					want = append(want, CallEvent{Name: name, Outcome: outcome(fnErr), State: in, Err: fnErr})
				case 2: // a call held in flight
					c := &call{finish: make(chan error), res: make(chan error, 1)}
					go func() {
						c.res <- b.Execute(ctx, func(context.Context) error { return <-c.finish })
					}()
					synctest.Wait()
					gen, state, ok := m.admit(time.Now())
					if !ok {
						require.NotEmpty(t, c.res, "a call the model refuses went through")
						err := <-c.res
						require.Equal(t, state, refusedIn(err), "refused in")
						want = append(want, CallEvent{Name: name, Outcome: Rejected, State: state, Err: err})
						break
					}
					require.Empty(t, c.res, "a call the model admits was refused")
					c.gen, c.start, c.state = gen, time.Now(), m.state
					inFlight = append(inFlight, c)
				case 3: // finish a call in flight
					if len(inFlight) == 0 {
						continue
					}
					i := arg / 3 % len(inFlight)
					c := inFlight[i]
					inFlight = append(inFlight[:i], inFlight[i+1:]...)
					err := []error{nil, errBoom, context.Canceled}[arg%3]
					if arg&0x80 != 0 {
						// A mistake under a Transport: ignored, judged by no
						// function of the user's (IsFailure would panic).
						err = &mistakeError{msg: "ratelimit: Transport with neither Limiter nor PerHost"}
					}
					c.finish <- err
					require.Equal(t, err, <-c.res)
					m.finish(c.gen, err, c.start, time.Now())
					want = append(want, CallEvent{Name: name, Outcome: outcome(err), State: c.state, Duration: time.Since(c.start), Err: err})
				case 4:
					time.Sleep(time.Duration(arg%8) * m.openTimeout / 4)
				case 5:
					if m.backoff {
						// OpenBackoff reads Counts, which moves a breaker
						// whose open time is up to half-open.
						m.observe(time.Now())
					}
					b.ForceOpen()
					if m.state != Open {
						m.move(Open, time.Now())
					}
					m.forced = true
				case 6:
					b.Reset()
					m.forced, m.openings = false, 0
					m.move(Closed, time.Now())
				case 7, 8: // a call whose func, or whose IsFailure, panics
					gen, state, ok := m.admit(time.Now())
					in := m.state
					var err error
					r := func() (r any) {
						defer func() { r = recover() }()
						err = b.Execute(ctx, func(context.Context) error {
							if op == 7 {
								panic("fn panicked")
							}
							return errBadPredicate
						})
						return nil
					}()
					if !ok {
						require.Nil(t, r)
						require.Equal(t, state, refusedIn(err), "refused in")
						want = append(want, CallEvent{Name: name, Outcome: Rejected, State: state, Err: err})
						break
					}
					require.Equal(t, []any{"fn panicked", "IsFailure panicked"}[op-7], r)
					if op == 7 { // one whose IsFailure panicked is not told
						want = append(want, CallEvent{Name: name, Outcome: Failure, State: in, Err: errPanic})
					}
					m.finish(gen, []error{errBoom, errBadPredicate}[op-7], time.Now(), time.Now())
				}
				m.observe(time.Now())
				require.Equal(t, m.state, b.State(), "after op %d", op)
				require.Equal(t, m.wantCounts(), b.Counts(), "after op %d", op)
				require.Equal(t, m.moves, tr.list(), "after op %d", op)
				require.Equal(t, append([]CallEvent(nil), want...), calls.take(), "told to OnCall after op %d", op)
				want = want[:0]
			}
			for _, c := range inFlight {
				c.finish <- nil
				<-c.res
			}
		})
	}
}

// callEvents keeps what OnCall was told.
type callEvents struct {
	mu     sync.Mutex
	events []CallEvent
}

func (c *callEvents) add(e CallEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
}

// take returns the events told since the last take, or nil.
func (c *callEvents) take() []CallEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.events
	c.events = nil
	return e
}
