package ctxsyncotel

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// A LimiterSource is what LimiterMetrics.Observe reads: a *ratelimit.Tally.
type LimiterSource interface {
	Counts() ratelimit.TallyCounts
}

// The attributes of the limiter's instruments.
const (
	LimiterNameKey     = attribute.Key("ctxsync.ratelimit.name")     // the name given to NewLimiterMetrics
	LimiterDecisionKey = attribute.Key("ctxsync.ratelimit.decision") // "allowed" or "refused"
	LimiterWaitKey     = attribute.Key("ctxsync.ratelimit.wait")     // "taken" or "failed"
)

// LimiterMetrics are the instruments of the limiters a ratelimit.Tally
// wraps: their decisions and waits, read from the Tally's counts by Observe
// at each collection, and the durations of the waits, fed by OnWait. See the
// package doc for the list.
//
//	m, err := ctxsyncotel.NewLimiterMetrics("api")
//	tally := &ratelimit.Tally{OnWait: m.OnWait(nil)}
//	limiter := tally.Wrap(ratelimit.NewTokenBucket(100, 10))
//	reg, err := m.Observe(tally)
//	defer reg.Unregister()
//
// Use NewLimiterMetrics; the zero LimiterMetrics is not usable. It is safe
// for concurrent use by multiple goroutines, and must not be copied after
// first use.
type LimiterMetrics struct {
	cfg  *config
	name string

	waitDuration metric.Float64Histogram
	taken        []metric.RecordOption
	failed       []metric.RecordOption

	observed atomic.Bool

	counts countersByName // the counters read from the Tallies' Counts; see counters
}

// NewLimiterMetrics makes the instruments of the limiter (or limiters)
// called name, the value of the ctxsync.ratelimit.name attribute. It fails
// on an empty name or one that is not UTF-8, a bad option, or an instrument
// the Meter refuses to make.
func NewLimiterMetrics(name string, opts ...Option) (*LimiterMetrics, error) {
	c, err := newConfig("limiter", name, opts)
	if err != nil {
		return nil, err
	}
	m := &LimiterMetrics{cfg: c, name: name}
	m.waitDuration, err = c.durationHistogram(c.meter(), "ctxsync.ratelimit.wait.duration",
		"The duration of the limiter's waits, by how they ended.")
	if err != nil {
		return nil, err
	}
	if err := nilInstrument("ctxsync.ratelimit.wait.duration", m.waitDuration); err != nil {
		return nil, err
	}
	m.taken = recordOpts(m.set(LimiterWaitKey.String("taken")))
	m.failed = recordOpts(m.set(LimiterWaitKey.String("failed")))
	return m, nil
}

func (m *LimiterMetrics) set(kvs ...attribute.KeyValue) attribute.Set {
	return m.cfg.set(append([]attribute.KeyValue{LimiterNameKey.String(m.name)}, kvs...)...)
}

func (m *LimiterMetrics) check() {
	if m == nil || m.cfg == nil {
		panic("ctxsyncotel: use NewLimiterMetrics; a nil or zero *LimiterMetrics is not usable")
	}
}

// OnWait returns a function for ratelimit.Tally.OnWait that records the
// duration of each wait in ctxsync.ratelimit.wait.duration, and then calls
// next, if not nil: the way to keep a function of one's own. next runs once
// for each wait even if ours panics or calls runtime.Goexit (a
// MeterProvider that breaks down); the panic then goes on. Set it before
// the Tally's first use, as Tally says.
func (m *LimiterMetrics) OnWait(next func(time.Duration, error)) func(time.Duration, error) {
	m.check()
	return func(d time.Duration, err error) {
		if next != nil {
			// Deferred, so that the user's function runs once even if
			// ours panics or calls runtime.Goexit (a Meter that breaks
			// down). In a closure, so that a recover called in the
			// user's function cannot take our panic (see OnCall).
			defer func() { next(d, err) }()
		}
		opts := m.taken
		if err != nil {
			opts = m.failed
		}
		m.waitDuration.Record(context.Background(), d.Seconds(), opts...)
	}
}

// Observe registers a callback that reads t.Counts at each collection and
// reports them to ctxsync.ratelimit.decisions and ctxsync.ratelimit.waits.
// It returns the registration, whose Unregister stops it. A LimiterMetrics
// observes one Tally at a time: Observe fails while an earlier registration
// is in force, as it does for a nil t or an instrument the Meter refuses to
// make.
//
// The counters never go down: a Tally observed once the registration of
// another ended (one made anew on a reload) adds its counts to theirs, and
// the same Tally observed again carries on.
func (m *LimiterMetrics) Observe(t LimiterSource) (metric.Registration, error) {
	m.check()
	if isNil(t) {
		return nil, errors.New("ctxsyncotel: LimiterMetrics.Observe of a nil Tally")
	}
	t.Counts() // a source that panics does so here, not at a collection (see PoolMetrics.Observe)
	if !m.observed.CompareAndSwap(false, true) {
		return nil, errors.New("ctxsyncotel: LimiterMetrics.Observe: limiter " + m.name + " is observed already")
	}
	free := true
	defer func() {
		// Refused, or the Meter panicked: with no registration to
		// Unregister, m would be observed for good.
		if free {
			m.observed.Store(false)
		}
	}()
	meter := m.cfg.meter()
	decisions, err1 := meter.Int64ObservableCounter("ctxsync.ratelimit.decisions",
		metric.WithDescription("AllowN, Take and TakeContext calls, by whether they took their events."),
		metric.WithUnit("{decision}"))
	waits, err2 := meter.Int64ObservableCounter("ctxsync.ratelimit.waits",
		metric.WithDescription("WaitN calls and Transport requests that returned, by whether they took their events."),
		metric.WithUnit("{wait}"))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	allowed := observeOpts(m.set(LimiterDecisionKey.String("allowed")))
	refused := observeOpts(m.set(LimiterDecisionKey.String("refused")))
	taken := observeOpts(m.set(LimiterWaitKey.String("taken")))
	failed := observeOpts(m.set(LimiterWaitKey.String("failed")))
	counts := m.counts.of(m.name, 4)
	undo := counts.observing(t)
	kept := false
	defer func() {
		if !kept {
			undo() // refused, or the Meter panicked: t is not read
		}
	}()
	reg, err := registered(meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		seq := counts.start()
		c := t.Counts()
		n := [...]int64{c.Allowed, c.Refused, c.Waited, c.WaitFailed}
		counts.apply(seq, n[:])
		o.ObserveInt64(decisions, n[0], allowed...)
		o.ObserveInt64(decisions, n[1], refused...)
		o.ObserveInt64(waits, n[2], taken...)
		o.ObserveInt64(waits, n[3], failed...)
		return nil
	}, decisions, waits))
	if err != nil {
		return nil, err
	}
	kept, free = true, false
	return &registration{Registration: reg, release: &m.observed}, nil
}
