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
	State() breaker.State
}

// The attributes of the breaker's instruments.
const (
	BreakerNameKey    = attribute.Key("ctxsync.breaker.name")    // the name given to NewBreakerMetrics
	BreakerStateKey   = attribute.Key("ctxsync.breaker.state")   // "closed", "open" or "half-open"
	BreakerOutcomeKey = attribute.Key("ctxsync.breaker.outcome") // a breaker.Outcome: "success", "failure"...
)

// BreakerMetrics are the instruments of one breaker.Breaker: its calls by
// outcome and their durations, fed by OnCall, and its state, read by
// Observe at each collection. See the package doc for the list.
//
//	m, err := ctxsyncotel.NewBreakerMetrics("payments")
//	settings.OnCall = m.OnCall(settings.OnCall)
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

	calls    metric.Int64Counter
	duration metric.Float64Histogram
	// The attributes of each outcome in each state, made once: an event
	// with an outcome or a state out of range (none today) goes to other.
	callAttrs [breaker.Rejected + 1][breaker.HalfOpen + 1]callAttrs
	other     callAttrs

	observed atomic.Bool
}

type callAttrs struct {
	add []metric.AddOption
	rec []metric.RecordOption
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
	m.calls, err1 = meter.Int64Counter("ctxsync.breaker.calls",
		metric.WithDescription("Calls through the breaker, by outcome and by the state they were let through or refused in."),
		metric.WithUnit("{call}"))
	m.duration, err2 = c.durationHistogram(meter, "ctxsync.breaker.call.duration",
		"The duration of the calls the breaker let through, by outcome.")
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	for o := breaker.Success; o <= breaker.Rejected; o++ {
		for st := breaker.Closed; st <= breaker.HalfOpen; st++ {
			s := m.set(BreakerOutcomeKey.String(o.String()), BreakerStateKey.String(st.String()))
			m.callAttrs[o][st] = callAttrs{add: addOpts(s), rec: recordOpts(s)}
		}
	}
	s := m.set(BreakerOutcomeKey.String("other"), BreakerStateKey.String("other"))
	m.other = callAttrs{add: addOpts(s), rec: recordOpts(s)}
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

// OnCall returns a function for breaker.Settings.OnCall that counts each
// call in ctxsync.breaker.calls, records the duration of each call let
// through in ctxsync.breaker.call.duration, and then calls next, if not nil:
// the way to keep a function of one's own.
func (m *BreakerMetrics) OnCall(next func(breaker.CallEvent)) func(breaker.CallEvent) {
	m.check()
	return func(e breaker.CallEvent) {
		a := &m.other
		if e.Outcome >= breaker.Success && e.Outcome <= breaker.Rejected && e.State >= breaker.Closed && e.State <= breaker.HalfOpen {
			a = &m.callAttrs[e.Outcome][e.State]
		}
		m.calls.Add(context.Background(), 1, a.add...)
		if e.Outcome != breaker.Rejected {
			m.duration.Record(context.Background(), e.Duration.Seconds(), a.rec...)
		}
		if next != nil {
			next(e)
		}
	}
}

// Observe registers a callback that reads b.State at each collection and
// reports it to ctxsync.breaker.state: 1 for the state b is in, 0 for the
// two others. It returns the registration, whose Unregister stops it. A
// BreakerMetrics observes one breaker at a time: Observe fails while an
// earlier registration is in force, as it does for a nil b or an instrument
// the Meter refuses to make.
func (m *BreakerMetrics) Observe(b BreakerSource) (metric.Registration, error) {
	m.check()
	if isNil(b) {
		return nil, errors.New("ctxsyncotel: BreakerMetrics.Observe of a nil breaker")
	}
	if !m.observed.CompareAndSwap(false, true) {
		return nil, errors.New("ctxsyncotel: BreakerMetrics.Observe: breaker " + m.name + " is observed already")
	}
	meter := m.cfg.meter()
	state, err := meter.Int64ObservableGauge("ctxsync.breaker.state",
		metric.WithDescription("1 for the state the breaker is in, in ctxsync.breaker.state, and 0 for the others."),
		metric.WithUnit("1"))
	if err != nil {
		m.observed.Store(false)
		return nil, err
	}
	var states [breaker.HalfOpen + 1][]metric.ObserveOption
	for st := breaker.Closed; st <= breaker.HalfOpen; st++ {
		states[st] = observeOpts(m.set(BreakerStateKey.String(st.String())))
	}
	reg, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		now := b.State()
		for st := breaker.Closed; st <= breaker.HalfOpen; st++ {
			v := int64(0)
			if st == now {
				v = 1
			}
			o.ObserveInt64(state, v, states[st]...)
		}
		return nil
	}, state)
	if err != nil {
		m.observed.Store(false)
		return nil, err
	}
	return &registration{Registration: reg, release: &m.observed}, nil
}
