package ctxsyncotel

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ctxsync/ctxsync/breaker"
)

// A BreakerSource is what BreakerMetrics.Observe reads: a *breaker.Breaker.
type BreakerSource interface {
	Metrics() breaker.Metrics
}

// The attributes of the breaker's instruments.
const (
	BreakerNameKey    = attribute.Key("ctxsync.breaker.name")    // the name given to NewBreakerMetrics
	BreakerStateKey   = attribute.Key("ctxsync.breaker.state")   // "closed", "open" or "half-open"
	BreakerOutcomeKey = attribute.Key("ctxsync.breaker.outcome") // a breaker.Outcome: "success", "failure"...
)

// BreakerMetrics are the instruments of one breaker.Breaker: the durations
// of its calls by outcome, fed by OnCall; its changes of state, fed by
// OnStateChange; its state and its calls by outcome, read from its Metrics
// by Observe at each collection. See the package doc for the list.
//
//	m, err := ctxsyncotel.NewBreakerMetrics("payments")
//	settings.OnCall = m.OnCall(settings.OnCall)
//	settings.OnStateChange = m.OnStateChange(settings.OnStateChange)
//	b := breaker.New(settings)
//	reg, err := m.Observe(b)
//	defer reg.Unregister()
//
// Use NewBreakerMetrics; the zero BreakerMetrics is not usable. It is safe
// for concurrent use by multiple goroutines, and must not be copied after
// first use.
type BreakerMetrics struct {
	cfg  *config
	name string

	duration metric.Float64Histogram
	changes  metric.Int64Counter
	// The attributes of each outcome and of each state, made once. An
	// event with an outcome or a state out of range (none today) goes to
	// the "other" ones.
	outcomes [breaker.Rejected + 1][]metric.RecordOption
	states   [breaker.HalfOpen + 1][]metric.AddOption
	otherOut []metric.RecordOption
	otherSt  []metric.AddOption

	observed atomic.Bool
}

// NewBreakerMetrics makes the instruments of the breaker called name, the
// value of the ctxsync.breaker.name attribute. It fails on an empty name, a
// bad option, or an instrument the Meter refuses to make.
func NewBreakerMetrics(name string, opts ...Option) (*BreakerMetrics, error) {
	c, err := newConfig("breaker", name, opts)
	if err != nil {
		return nil, err
	}
	m := &BreakerMetrics{cfg: c, name: name}
	meter := c.meter()
	var err1, err2 error
	m.duration, err1 = c.durationHistogram(meter, "ctxsync.breaker.call.duration",
		"The duration of the calls the breaker let through, by outcome.")
	m.changes, err2 = meter.Int64Counter("ctxsync.breaker.state_changes",
		metric.WithDescription("Changes of the breaker's state, by the state entered."),
		metric.WithUnit("{change}"))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if err := nilInstrument("ctxsync.breaker.call.duration", m.duration, "ctxsync.breaker.state_changes", m.changes); err != nil {
		return nil, err
	}
	for o := breaker.Success; o <= breaker.Rejected; o++ {
		m.outcomes[o] = recordOpts(m.set(BreakerOutcomeKey.String(o.String())))
	}
	for st := breaker.Closed; st <= breaker.HalfOpen; st++ {
		m.states[st] = addOpts(m.set(BreakerStateKey.String(st.String())))
	}
	m.otherOut = recordOpts(m.set(BreakerOutcomeKey.String("other")))
	m.otherSt = addOpts(m.set(BreakerStateKey.String("other")))
	return m, nil
}

func (m *BreakerMetrics) set(kvs ...attribute.KeyValue) attribute.Set {
	return m.cfg.set(append([]attribute.KeyValue{BreakerNameKey.String(m.name)}, kvs...)...)
}

func (m *BreakerMetrics) check() {
	if m == nil || m.cfg == nil {
		panic("ctxsyncotel: use NewBreakerMetrics; a nil or zero *BreakerMetrics is not usable")
	}
}

// OnCall returns a function for breaker.Settings.OnCall that records the
// duration of each call let through in ctxsync.breaker.call.duration, by
// outcome, and then calls next, if not nil: the way to keep a function of
// one's own. Refused calls take no time and are not recorded: Observe
// counts them, with the others, from the breaker's Metrics.
//
// A histogram costs each call: with OnCall set the breaker reads the clock
// twice per call, and the SDK takes its time to record. Where calls are
// fast and many, leave OnCall out: Observe alone reports the calls and the
// state, at no cost to the calls.
func (m *BreakerMetrics) OnCall(next func(breaker.CallEvent)) func(breaker.CallEvent) {
	m.check()
	return func(e breaker.CallEvent) {
		if e.Outcome != breaker.Rejected {
			opts := m.otherOut
			if e.Outcome >= breaker.Success && e.Outcome < breaker.Rejected {
				opts = m.outcomes[e.Outcome]
			}
			m.duration.Record(context.Background(), e.Duration.Seconds(), opts...)
		}
		if next != nil {
			next(e)
		}
	}
}

// OnStateChange returns a function for breaker.Settings.OnStateChange that
// counts each change in ctxsync.breaker.state_changes, by the state entered,
// and then calls next, if not nil. A breaker that opens and closes again
// between two collections shows there, where the state gauge misses it.
func (m *BreakerMetrics) OnStateChange(next func(from, to breaker.State, counts breaker.Counts)) func(from, to breaker.State, counts breaker.Counts) {
	m.check()
	return func(from, to breaker.State, counts breaker.Counts) {
		opts := m.otherSt
		if to >= breaker.Closed && to <= breaker.HalfOpen {
			opts = m.states[to]
		}
		m.changes.Add(context.Background(), 1, opts...)
		if next != nil {
			next(from, to, counts)
		}
	}
}

// Observe registers a callback that reads b.Metrics at each collection and
// reports ctxsync.breaker.state (1 for the state b is in, 0 for the two
// others) and ctxsync.breaker.calls (the Total counts, by outcome). It
// returns the registration, whose Unregister stops it. A BreakerMetrics
// observes one breaker at a time: Observe fails while an earlier
// registration is in force, as it does for a nil b or an instrument the
// Meter refuses to make. It reads b once: it panics with b's panic if b is
// the zero Breaker.
func (m *BreakerMetrics) Observe(b BreakerSource) (metric.Registration, error) {
	m.check()
	if isNil(b) {
		return nil, errors.New("ctxsyncotel: BreakerMetrics.Observe of a nil breaker")
	}
	b.Metrics() // a zero Breaker panics here, not at a collection (see PoolMetrics.Observe)
	if !m.observed.CompareAndSwap(false, true) {
		return nil, errors.New("ctxsyncotel: BreakerMetrics.Observe: breaker " + m.name + " is observed already")
	}
	reg, err := registered(m.observe(b))
	if err != nil {
		m.observed.Store(false)
		return nil, err
	}
	return &registration{Registration: reg, release: &m.observed}, nil
}

func (m *BreakerMetrics) observe(b BreakerSource) (metric.Registration, error) {
	meter := m.cfg.meter()
	state, err1 := meter.Int64ObservableGauge("ctxsync.breaker.state",
		metric.WithDescription("1 for the state the breaker is in, in ctxsync.breaker.state, and 0 for the others."),
		metric.WithUnit("1"))
	calls, err2 := meter.Int64ObservableCounter("ctxsync.breaker.calls",
		metric.WithDescription("Calls through the breaker since it was made or last Reset, by outcome."),
		metric.WithUnit("{call}"))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	var states [breaker.HalfOpen + 1][]metric.ObserveOption
	for st := breaker.Closed; st <= breaker.HalfOpen; st++ {
		states[st] = observeOpts(m.set(BreakerStateKey.String(st.String())))
	}
	var outcomes [breaker.Rejected + 1][]metric.ObserveOption
	for o := breaker.Success; o <= breaker.Rejected; o++ {
		outcomes[o] = observeOpts(m.set(BreakerOutcomeKey.String(o.String())))
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		bm := b.Metrics()
		for st := breaker.Closed; st <= breaker.HalfOpen; st++ {
			v := int64(0)
			if st == bm.State {
				v = 1
			}
			o.ObserveInt64(state, v, states[st]...)
		}
		o.ObserveInt64(calls, bm.Total.Successes, outcomes[breaker.Success]...)
		o.ObserveInt64(calls, bm.Total.Failures, outcomes[breaker.Failure]...)
		o.ObserveInt64(calls, bm.Total.Ignored, outcomes[breaker.Ignored]...)
		o.ObserveInt64(calls, bm.Total.Rejected, outcomes[breaker.Rejected]...)
		return nil
	}, state, calls)
}
