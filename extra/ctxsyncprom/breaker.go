package ctxsyncprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctxsync/ctxsync/breaker"
)

// A Breaker is what AddBreaker reads: *breaker.Breaker is one.
type Breaker interface {
	Metrics() breaker.Metrics
}

// AddBreaker adds b under name: each scrape reads b.Metrics(). An empty name
// means the breaker's own, Settings.Name (b.Metrics().Name), so that the
// name is written once; a name given wins over the breaker's own. For the
// histogram of its calls' durations, give it BreakerOnCall("") too (or
// BreakerOnCall(name), if name is given here).
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
		if name = b.Metrics().Name; name == "" {
			panic("ctxsyncprom: AddBreaker with an empty name, of a breaker with no Settings.Name: name the breaker, or give AddBreaker a name")
		}
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
// An empty name means the breaker's own: each observation is labelled with
// the Name of its event, the breaker's Settings.Name, so that an OnCall
// made before the breaker need not be told it again. Given to a
// breaker.Transport, it labels the calls of each host's breaker with that
// breaker's name (the Transport's Settings.Name and the host): a set of
// series per host, kept until Remove; give a name to count every host
// under one. A name given wins over the events' own. Calls with the same
// name share the histogram.
//
// The histogram's series were looked up once: here for a name given, at
// the first event of each name otherwise. Note that with OnCall set, the
// breaker reads the clock twice for each call it lets through.
//
// BreakerOnCall panics if name is not UTF-8. The OnCall of
// BreakerOnCall("") panics, at the first call of a breaker with no
// Settings.Name (or one that is not UTF-8), with a message that says so,
// in that call's goroutine. Name the breaker, or give BreakerOnCall a name.
func (c *Collector) BreakerOnCall(name string) func(breaker.CallEvent) {
	c.mustBeMade()
	if name == "" {
		return c.ownBreakerOnCall()
	}
	checkName("BreakerOnCall", name)
	s := c.callSeries(name)
	return func(e breaker.CallEvent) { s.observe(e) }
}

// callSeries are the histogram series of one breaker's name, by outcome.
type callSeries struct{ success, failure, ignored prometheus.Observer }

func (c *Collector) callSeries(name string) *callSeries {
	return &callSeries{
		success: c.callDuration.WithLabelValues(name, breaker.Success.String()),
		failure: c.callDuration.WithLabelValues(name, breaker.Failure.String()),
		ignored: c.callDuration.WithLabelValues(name, breaker.Ignored.String()),
	}
}

func (s *callSeries) observe(e breaker.CallEvent) {
	switch e.Outcome {
	case breaker.Success:
		s.success.Observe(e.Duration.Seconds())
	case breaker.Failure:
		s.failure.Observe(e.Duration.Seconds())
	case breaker.Ignored:
		s.ignored.Observe(e.Duration.Seconds())
	}
}

// ownBreakerOnCall is BreakerOnCall(""): the same OnCall, whose series are
// those of each event's own name.
func (c *Collector) ownBreakerOnCall() func(breaker.CallEvent) {
	series := &byName[*callSeries]{make: func(name string) *callSeries {
		if name == "" {
			panic(`ctxsyncprom: BreakerOnCall("") told of a breaker with no Settings.Name: name the breaker, or give BreakerOnCall a name`)
		}
		checkName(`BreakerOnCall("") told of a breaker`, name)
		return c.callSeries(name)
	}}
	return func(e breaker.CallEvent) {
		// Looked up even for a refusal, so that a breaker with no name
		// shows at its first call, whatever its outcome.
		// series.get by hand: the generic call is not inlined.
		if f := series.first.Load(); f != nil && f.name == e.Name {
			f.v.observe(e)
			return
		}
		series.slow(e.Name).observe(e)
	}
}

// JoinOnCall returns an OnCall that calls each of fs that is not nil, in
// order; nil if there is none. If one panics or calls runtime.Goexit, those
// after it are called all the same, once, and the panic then goes on (as
// the last one, if another panics too). A later one that calls
// runtime.Goexit ends the goroutine instead, and an earlier one's panic is
// lost, as Go's deferred calls lose it.
func JoinOnCall(fs ...func(breaker.CallEvent)) func(breaker.CallEvent) {
	var set []func(breaker.CallEvent)
	for _, f := range fs {
		if f != nil {
			set = append(set, f)
		}
	}
	return join(set)
}
