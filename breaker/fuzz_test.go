package breaker

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// breakerModel is what a Breaker with the consecutive-failure rule should be.
// gen counts changes of state (and Resets): a call's outcome counts only in
// the generation that admitted it.
type breakerModel struct {
	threshold, maxTrials, successes int
	openTimeout                     time.Duration

	state       State
	gen         int
	consecutive int       // failures in a row, closed
	until       time.Time // open
	forced      bool
	trials      int // half-open: calls in flight
	wins        int // half-open: calls that succeeded
}

// admit decides on a call at now: the generation it is admitted in, or the
// state it is refused in.
func (m *breakerModel) admit(now time.Time) (gen int, refused State, ok bool) {
	if m.state == Open {
		if m.forced || now.Before(m.until) {
			return 0, Open, false
		}
		m.move(HalfOpen, now)
	}
	if m.state == HalfOpen {
		if m.trials == m.maxTrials {
			return 0, HalfOpen, false
		}
		m.trials++
	}
	return m.gen, 0, true
}

// finish records the outcome of a call admitted in generation gen.
func (m *breakerModel) finish(gen int, err error, now time.Time) {
	if gen != m.gen {
		return // admitted before a change of state
	}
	ignored, failed := errors.Is(err, context.Canceled), err != nil
	switch m.state {
	case Closed:
		switch {
		case ignored:
		case failed:
			if m.consecutive++; m.consecutive >= m.threshold {
				m.move(Open, now)
			}
		default:
			m.consecutive = 0
		}
	case HalfOpen:
		m.trials--
		switch {
		case ignored:
		case failed:
			m.move(Open, now)
		default:
			if m.wins++; m.wins >= m.successes {
				m.move(Closed, now)
			}
		}
	}
}

func (m *breakerModel) move(to State, now time.Time) {
	m.state = to
	m.gen++
	m.consecutive, m.trials, m.wins = 0, 0, 0
	if to == Open {
		m.until = now.Add(m.openTimeout)
	}
}

// A call is one Execute in flight, blocked in its func until the script
// finishes it.
type call struct {
	gen    int // in the model
	finish chan error
	res    chan error
}

// FuzzBreakerModel runs a script of calls, some finishing at once and some
// held in flight, with the passing of virtual time, ForceOpen and Reset,
// against breakerModel: after each step, every call's outcome (its func's
// error, or a refusal in the state the model says), State, and the
// consecutive failures in Counts. Each step is two bytes: an operation and
// its argument.
func FuzzBreakerModel(f *testing.F) {
	// Three failures open it; the open time ends; one trial closes it.
	f.Add(uint8(0x12), []byte{1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 4, 3, 0, 0, 4, 1, 0, 0, 0, 0})
	// Two trials at once, a third refused; a failed trial opens it again.
	f.Add(uint8(0x25), []byte{1, 0, 1, 0, 4, 4, 2, 0, 2, 0, 2, 0, 3, 0, 3, 1, 0, 0, 4, 4, 2, 0, 3, 0, 2, 0, 3, 0})
	// Calls in flight across a change of state count for nothing after it;
	// ForceOpen holds until Reset; a canceled call counts neither way.
	f.Add(uint8(0x11), []byte{2, 0, 2, 0, 1, 0, 1, 0, 4, 4, 0, 0, 3, 1, 3, 1, 0, 0, 5, 0, 4, 7, 0, 0, 6, 0, 2, 0, 3, 2, 1, 0})
	f.Fuzz(func(t *testing.T, settingsB uint8, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			m := &breakerModel{
				threshold:   1 + int(settingsB&3),
				maxTrials:   1 + int(settingsB>>2&3)%3,
				successes:   1 + int(settingsB>>4&3),
				openTimeout: time.Second,
			}
			b := New(Settings{
				FailureThreshold: m.threshold,
				HalfOpenMaxCalls: m.maxTrials,
				SuccessThreshold: m.successes,
				OpenTimeout:      m.openTimeout,
			})
			ctx := t.Context()
			var inFlight []*call
			refusedIn := func(err error) State {
				var oe *OpenError
				require.ErrorAs(t, err, &oe)
				return oe.State
			}
			for ; len(script) >= 2; script = script[2:] {
				op, arg := script[0]%7, int(script[1])
				switch op {
				case 0, 1: // a call that succeeds or fails at once
					var want error
					if op == 1 {
						want = errBoom
					}
					gen, state, ok := m.admit(time.Now())
					err := b.Execute(ctx, func(context.Context) error { return want })
					if !ok {
						require.Equal(t, state, refusedIn(err), "refused in")
						break
					}
					require.Equal(t, want, err)
					m.finish(gen, want, time.Now())
				case 2: // a call held in flight
					c := &call{finish: make(chan error), res: make(chan error, 1)}
					go func() {
						c.res <- b.Execute(ctx, func(context.Context) error { return <-c.finish })
					}()
					synctest.Wait()
					gen, state, ok := m.admit(time.Now())
					if !ok {
						require.NotEmpty(t, c.res, "a call the model refuses went through")
						require.Equal(t, state, refusedIn(<-c.res), "refused in")
						break
					}
					require.Empty(t, c.res, "a call the model admits was refused")
					c.gen = gen
					inFlight = append(inFlight, c)
				case 3: // finish a call in flight
					if len(inFlight) == 0 {
						continue
					}
					i := arg / 3 % len(inFlight)
					c := inFlight[i]
					inFlight = append(inFlight[:i], inFlight[i+1:]...)
					err := []error{nil, errBoom, context.Canceled}[arg%3]
					c.finish <- err
					require.Equal(t, err, <-c.res)
					m.finish(c.gen, err, time.Now())
				case 4:
					time.Sleep(time.Duration(arg%8) * m.openTimeout / 4)
				case 5:
					b.ForceOpen()
					if m.state != Open {
						m.move(Open, time.Now())
					}
					m.forced = true
				case 6:
					b.Reset()
					m.forced = false
					m.move(Closed, time.Now())
				}
				require.Equal(t, m.state, b.State(), "after op %d", op)
				require.Equal(t, int64(m.consecutive), b.Counts().ConsecutiveFailures, "after op %d", op)
			}
			for _, c := range inFlight {
				c.finish <- nil
				<-c.res
			}
		})
	})
}
