package ctxsyncotel

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"unicode/utf8"

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
	BreakerNameKey    = attribute.Key("ctxsync.breaker.name")    // the name given to NewBreakerMetrics, or the breaker's own
	BreakerStateKey   = attribute.Key("ctxsync.breaker.state")   // "closed", "open" or "half-open"
	BreakerOutcomeKey = attribute.Key("ctxsync.breaker.outcome") // a breaker.Outcome: "success", "failure"...
)

// BreakerMetrics are the instruments of one breaker.Breaker: the durations
// of its calls by outcome, fed by OnCall; its changes of state, fed by
// OnStateChange; its state and its calls by outcome, read from its Metrics
// by Observe at each collection. See the package doc for the list.
//
//	m, err := ctxsyncotel.NewBreakerMetrics("")
//	settings.Name = "payments"
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
	name string // "": the breaker's own

	duration metric.Float64Histogram
	changes  metric.Int64Counter
	named    *breakerOpts          // of name, if given
	own      *byName[*breakerOpts] // else those of each name seen

	// pending counts, by state entered, the changes told before the
	// metrics made with no name knew one (see OnStateChange). Guarded by
	// own.mu.
	pending [breaker.HalfOpen + 2]int64

	observed atomic.Bool

	calls countersByName // ctxsync.breaker.calls of each name, by outcome
}

// breakerOpts are the options of the attribute sets of one breaker's name,
// for each outcome and each state, made once. An event with an outcome or
// a state out of range (none today) goes to the "other" ones.
type breakerOpts struct {
	outcomes [breaker.Rejected + 1][]metric.RecordOption
	states   [breaker.HalfOpen + 1][]metric.AddOption
	otherOut []metric.RecordOption
	otherSt  []metric.AddOption
}

func (o *breakerOpts) outcome(out breaker.Outcome) []metric.RecordOption {
	if out >= breaker.Success && out <= breaker.Rejected {
		return o.outcomes[out]
	}
	return o.otherOut
}

func (o *breakerOpts) state(st breaker.State) []metric.AddOption {
	if st >= breaker.Closed && st <= breaker.HalfOpen {
		return o.states[st]
	}
	return o.otherSt
}

// NewBreakerMetrics makes the instruments of the breaker called name, the
// value of the ctxsync.breaker.name attribute. It fails on a name that is
// not UTF-8, a bad option, or an instrument the Meter refuses to make.
//
// An empty name means the breaker's own, its Settings.Name, so that the name
// is written once: OnCall reads it from each event, Observe from its
// breaker's Metrics. Each name's attributes are made once, when it is first
// seen, and each call is measured under the name of its own breaker: an
// OnCall given to a breaker.Transport measures the calls of each host's
// breaker under that breaker's name (the Transport's Settings.Name and the
// host). A change of state carries no name: OnStateChange counts it under
// the first name the metrics learned, from Observe or from OnCall's first
// event, and holds the changes told before that until it is learned; so
// metrics made with no name count the changes of one breaker. A name given
// wins over the breakers' own. OnCall panics, and Observe fails, for a
// breaker with no Settings.Name, or one that is not UTF-8 (see OnCall and
// Observe).
func NewBreakerMetrics(name string, opts ...Option) (*BreakerMetrics, error) {
	if err := checkUTF8("breaker", name); err != nil {
		return nil, err
	}
	c, err := applyOptions(opts)
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
	if name != "" {
		m.named = m.opts(name)
		return m, nil
	}
	m.own = &byName[*breakerOpts]{
		make: func(name string) *breakerOpts {
			if name == "" {
				panic(`ctxsyncotel: the OnCall of NewBreakerMetrics("") told of a breaker with no Settings.Name: name the breaker, or give NewBreakerMetrics a name`)
			}
			if !utf8.ValidString(name) {
				panic(fmt.Sprintf(`ctxsyncotel: the OnCall of NewBreakerMetrics("") told of a breaker whose Settings.Name %q is not UTF-8`, name))
			}
			return m.opts(name)
		},
		// The first name learned: count the changes of state held
		// until now under it. They are taken under the lock, which
		// firstOpts holds as it holds a change, so that none is held
		// after them; and counted after it, by the Meter, the user's
		// code.
		onFirst: func(o *breakerOpts) func() {
			held := m.pending
			clear(m.pending[:])
			return func() {
				for i, n := range held {
					if n > 0 {
						st := breaker.State(i)
						if i == len(held)-1 {
							st = -1 // out of range: the "other" state
						}
						m.changes.Add(context.Background(), n, o.state(st)...)
					}
				}
			}
		},
	}
	return m, nil
}

func (m *BreakerMetrics) opts(name string) *breakerOpts {
	o := &breakerOpts{}
	for out := breaker.Success; out <= breaker.Rejected; out++ {
		o.outcomes[out] = recordOpts(m.set(name, BreakerOutcomeKey.String(out.String())))
	}
	for st := breaker.Closed; st <= breaker.HalfOpen; st++ {
		o.states[st] = addOpts(m.set(name, BreakerStateKey.String(st.String())))
	}
	o.otherOut = recordOpts(m.set(name, BreakerOutcomeKey.String("other")))
	o.otherSt = addOpts(m.set(name, BreakerStateKey.String("other")))
	return o
}

func (m *BreakerMetrics) set(name string, kvs ...attribute.KeyValue) attribute.Set {
	return m.cfg.set(append([]attribute.KeyValue{BreakerNameKey.String(name)}, kvs...)...)
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
//
// next runs once for each call, after ours, even if ours panics or calls
// runtime.Goexit (a MeterProvider that breaks down): the panic then goes
// on, once next has returned.
//
// Made with no name, OnCall measures each call under the event's Name, the
// breaker's Settings.Name; told of a call of a breaker with no name (or one
// that is not UTF-8), it panics, after calling next, at the breaker's first
// call, in that call's goroutine. Name the breaker, or give
// NewBreakerMetrics a name.
func (m *BreakerMetrics) OnCall(next func(breaker.CallEvent)) func(breaker.CallEvent) {
	m.check()
	return func(e breaker.CallEvent) {
		if next != nil {
			// Deferred, so that the user's function runs once even if
			// ours panics or calls runtime.Goexit (a Meter that breaks
			// down, or a breaker with no name): a program that counts
			// its own calls must not lose one to its metrics. In a
			// closure, so that a recover called in the user's function
			// cannot take our panic: it is not called by a deferred call.
			defer func() { next(e) }()
		}
		o := m.named
		if m.own != nil {
			// Looked up even for a refusal, so that a breaker with no
			// name shows at its first call, whatever its outcome. (By
			// hand: the generic get is not inlined.)
			if f := m.own.first.Load(); f != nil && f.name == e.Name {
				o = f.v
			} else {
				o = m.own.slow(e.Name)
			}
		}
		if e.Outcome != breaker.Rejected {
			m.duration.Record(context.Background(), e.Duration.Seconds(), o.outcome(e.Outcome)...)
		}
	}
}

// OnStateChange returns a function for breaker.Settings.OnStateChange that
// counts each change in ctxsync.breaker.state_changes, by the state entered,
// and then calls next, if not nil, once, even if ours panics (see OnCall).
// A breaker that opens and closes again between two collections shows
// there, where the state gauge misses it.
//
// A change of state carries no name: made with no name, the metrics count
// it under the first name they learned (see NewBreakerMetrics), and hold a
// change told before they learned one until they do.
func (m *BreakerMetrics) OnStateChange(next func(from, to breaker.State, counts breaker.Counts)) func(from, to breaker.State, counts breaker.Counts) {
	m.check()
	return func(from, to breaker.State, counts breaker.Counts) {
		if next != nil {
			defer func() { next(from, to, counts) }() // as OnCall's
		}
		o := m.named
		if m.own != nil {
			o = m.firstOpts(to)
		}
		if o != nil {
			m.changes.Add(context.Background(), 1, o.state(to)...)
		}
	}
}

// firstOpts returns the options of the first name learned by metrics made
// with no name; or, if none is yet, holds the change to state to for it
// and returns nil.
func (m *BreakerMetrics) firstOpts(to breaker.State) *breakerOpts {
	if f := m.own.first.Load(); f != nil {
		return f.v
	}
	m.own.mu.Lock()
	defer m.own.mu.Unlock()
	// Looked at again under the lock, which the learning of the first
	// name holds as it counts the changes held: a change held after that
	// count would be held for good.
	if f := m.own.first.Load(); f != nil {
		return f.v
	}
	i := len(m.pending) - 1
	if to >= breaker.Closed && to <= breaker.HalfOpen {
		i = int(to)
	}
	m.pending[i]++
	return nil
}

// Observe registers a callback that reads b.Metrics at each collection and
// reports ctxsync.breaker.state (1 for the state b is in, 0 for the two
// others) and ctxsync.breaker.calls (the Total counts, by outcome). It
// returns the registration, whose Unregister stops it. A BreakerMetrics
// observes one breaker at a time: Observe fails while an earlier
// registration is in force, as it does for a nil b, for metrics made with
// no name of a breaker with no Settings.Name, or for an instrument the Meter
// refuses to make. It reads b once, and with it b's own name, if m has
// none: it panics with b's panic if b is the zero Breaker.
//
// The counter never goes down: it carries on through a Reset of b, which
// zeroes Total, and a breaker observed under the name once the
// registration of another ended adds its counts to it. The calls b counted
// between the last collection and a Reset are lost to it. A Reset shows
// only as a count that fell since the last collection: if by the next one
// b has counted as many calls of each outcome as before the Reset, none
// fell, the Reset goes unseen, and the calls made since it, up to those
// counted before, are lost too.
func (m *BreakerMetrics) Observe(b BreakerSource) (metric.Registration, error) {
	m.check()
	if isNil(b) {
		return nil, errors.New("ctxsyncotel: BreakerMetrics.Observe of a nil breaker")
	}
	name := b.Metrics().Name // a zero Breaker panics here, not at a collection (see PoolMetrics.Observe)
	if m.name != "" {
		name = m.name // given, it wins
	} else if name == "" {
		return nil, errors.New(`ctxsyncotel: BreakerMetrics.Observe of a breaker with no Settings.Name, for metrics made by NewBreakerMetrics(""): name the breaker, or give NewBreakerMetrics a name`)
	} else if err := checkUTF8("breaker", name); err != nil {
		return nil, err
	}
	if !m.observed.CompareAndSwap(false, true) {
		return nil, errors.New("ctxsyncotel: BreakerMetrics.Observe: breaker " + name + " is observed already")
	}
	free := true
	defer func() {
		// Refused, or the Meter panicked: with no registration to
		// Unregister, m would be observed for good.
		if free {
			m.observed.Store(false)
		}
	}()
	if m.own != nil {
		m.own.get(name) // learned: OnStateChange counts under it, if it is the first
	}
	reg, err := registered(m.observe(b, name))
	if err != nil {
		return nil, err
	}
	free = false
	return &registration{Registration: reg, release: &m.observed}, nil
}

func (m *BreakerMetrics) observe(b BreakerSource, name string) (metric.Registration, error) {
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
		states[st] = observeOpts(m.set(name, BreakerStateKey.String(st.String())))
	}
	var outcomes [breaker.Rejected + 1][]metric.ObserveOption
	for o := breaker.Success; o <= breaker.Rejected; o++ {
		outcomes[o] = observeOpts(m.set(name, BreakerOutcomeKey.String(o.String())))
	}
	totals := m.calls.of(name, int(breaker.Rejected)+1)
	undo := totals.observing(b)
	kept := false
	defer func() {
		if !kept {
			undo() // refused, or the Meter panicked: b is not read
		}
	}()
	reg, err := registered(meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		seq := totals.start()
		bm := b.Metrics() // may run OnStateChange: outside totals' lock
		for st := breaker.Closed; st <= breaker.HalfOpen; st++ {
			v := int64(0)
			if st == bm.State {
				v = 1
			}
			o.ObserveInt64(state, v, states[st]...)
		}
		var n [breaker.Rejected + 1]int64
		n[breaker.Success] = bm.Total.Successes
		n[breaker.Failure] = bm.Total.Failures
		n[breaker.Ignored] = bm.Total.Ignored
		n[breaker.Rejected] = bm.Total.Rejected
		totals.apply(seq, n[:])
		for out := breaker.Success; out <= breaker.Rejected; out++ {
			o.ObserveInt64(calls, n[out], outcomes[out]...)
		}
		return nil
	}, state, calls))
	kept = err == nil
	return reg, err
}
