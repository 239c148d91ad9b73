package ctxsyncprom

import (
	"github.com/ctxsync/ctxsync/breaker"
)

// A Breaker is what AddBreaker reads: *breaker.Breaker is one.
type Breaker interface {
	Metrics() breaker.Metrics
}

// AddBreaker adds b under name: each scrape reads b.Metrics(). An empty name
// means the breaker's own, Settings.Name (b.Metrics().Name), so that the
// name is written once. For the histogram of its calls' durations, give it
// BreakerOnCall(name) too.
//
// A scrape moves an open breaker whose time is up to half-open, as
// Breaker.Metrics does, telling its OnStateChange.
//
// AddBreaker returns an error wrapping ErrDuplicateName if a breaker was
// added under name already. It panics if b is nil, or if name and the
// breaker's own name are both empty.
func (c *Collector) AddBreaker(name string, b Breaker) error {
	c.mustBeMade()
	checkSource("AddBreaker", b)
	if name == "" {
		name = b.Metrics().Name
	}
	checkName("AddBreaker", name)
	d := &c.d
	s := &breakerSource{b: b}
	for i, st := range breakerStates {
		s.state[i] = newSeries(d.breakerState, false, name, st.String())
	}
	for i, o := range breakerOutcomes {
		s.calls[i] = newSeries(d.breakerCalls, true, name, o.String())
	}
	s.disabled = newSeries(d.breakerDisabled, false, name)
	s.slow = newSeries(d.breakerSlowCalls, true, name)
	s.openings = newSeries(d.breakerOpenings, false, name)
	s.windowCalls = newSeries(d.breakerWindowCalls, false, name)
	s.failureRatio = newSeries(d.breakerFailureRatio, false, name)
	s.slowRatio = newSeries(d.breakerSlowCallRatio, false, name)
	return c.add("breaker", name, s)
}

// In the order of their label values, as the registry sorts them.
var (
	breakerStates   = [...]breaker.State{breaker.Closed, breaker.HalfOpen, breaker.Open}
	breakerOutcomes = [...]breaker.Outcome{breaker.Failure, breaker.Ignored, breaker.Rejected, breaker.Success}
)

type breakerSource struct {
	b     Breaker
	state [len(breakerStates)]series
	calls [len(breakerOutcomes)]series

	disabled, slow, openings, windowCalls, failureRatio, slowRatio series
}

func (s *breakerSource) size() int { return len(s.state) + len(s.calls) + 6 }

func (s *breakerSource) collect(out []sample) []sample {
	m := s.b.Metrics()
	for i, st := range breakerStates {
		out = append(out, s.state[i].at(b2f(m.State == st)))
	}
	t := &m.Total
	out = append(out,
		s.calls[0].at(float64(t.Failures)),
		s.calls[1].at(float64(t.Ignored)),
		s.calls[2].at(float64(t.Rejected)),
		s.calls[3].at(float64(t.Successes)),
		s.slow.at(float64(t.Slow)),
		s.disabled.at(b2f(m.Disabled)),
		s.openings.at(float64(m.Openings)),
	)
	// The rates are -1 when no rate rule is on: there is no window then,
	// and a series of -1 would read as a value.
	if m.FailureRate != breaker.NoRate {
		out = append(out,
			s.windowCalls.at(float64(m.WindowCalls)),
			s.failureRatio.at(m.FailureRate/100),
			s.slowRatio.at(m.SlowCallRate/100),
		)
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// BreakerOnCall returns an OnCall for the Settings of the breaker named
// name: it feeds breaker_call_duration_seconds, the durations of the calls
// the breaker let through, by outcome (success, failure, ignored). Refused
// calls took no time: breaker_calls_total counts them. Add the breaker with
// AddBreaker for the rest of its metrics.
//
// The histogram's series were looked up here, once. Note that with OnCall
// set, the breaker reads the clock twice for each call it lets through.
// Calls with the same name share the histogram.
//
// BreakerOnCall panics if name is empty.
func (c *Collector) BreakerOnCall(name string) func(breaker.CallEvent) {
	c.mustBeMade()
	checkName("BreakerOnCall", name)
	success := c.callDuration.WithLabelValues(name, breaker.Success.String())
	failure := c.callDuration.WithLabelValues(name, breaker.Failure.String())
	ignored := c.callDuration.WithLabelValues(name, breaker.Ignored.String())
	return func(e breaker.CallEvent) {
		switch e.Outcome {
		case breaker.Success:
			success.Observe(e.Duration.Seconds())
		case breaker.Failure:
			failure.Observe(e.Duration.Seconds())
		case breaker.Ignored:
			ignored.Observe(e.Duration.Seconds())
		}
	}
}

// JoinOnCall returns an OnCall that calls each of fs that is not nil, in
// order; nil if there is none. If one panics, those after it are not called
// for that call.
func JoinOnCall(fs ...func(breaker.CallEvent)) func(breaker.CallEvent) {
	var set []func(breaker.CallEvent)
	for _, f := range fs {
		if f != nil {
			set = append(set, f)
		}
	}
	return join(set)
}
