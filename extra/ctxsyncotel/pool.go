package ctxsyncotel

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/ctxsync/ctxsync/pool"
)

// A PoolSource is what PoolMetrics.Observe reads: a *pool.Pool[T] of any T.
type PoolSource interface {
	Stats() pool.Stats
}

// PoolMetrics are the instruments of one pool.Pool, named after the
// db.client.connection.* semantic conventions where they fit, with the
// db.client.connection.pool.name attribute. See the package doc for the
// list.
//
// It measures in two ways, which may be used together or apart: Hooks, set
// in the pool's Config, feed the histograms of wait and create times and the
// count of timeouts as the events happen; Observe, given the pool once made,
// reads its Stats at each collection for the gauges and the other counters.
//
//	m, err := ctxsyncotel.NewPoolMetrics("", ctxsyncotel.WithMeterProvider(mp))
//	cfg.Name = "db"
//	cfg.Hooks = m.Hooks(cfg.Hooks)
//	p, err := pool.New(cfg)
//	reg, err := m.Observe(p)
//	defer reg.Unregister()
//
// Use NewPoolMetrics; the zero PoolMetrics is not usable. It is safe for
// concurrent use by multiple goroutines, and must not be copied after first
// use.
type PoolMetrics struct {
	cfg  *config
	name string // "": each pool's own

	waitTime   metric.Float64Histogram
	createTime metric.Float64Histogram
	timeouts   metric.Int64Counter
	named      *poolOpts          // of name, if given
	own        *byName[*poolOpts] // else those of each name seen

	observed atomic.Bool // an Observe is registered

	counts countersByName // the counters read from Stats, of each name; see poolCounts
}

// poolOpts are the options of the attribute set of one pool's name.
type poolOpts struct {
	rec []metric.RecordOption
	add []metric.AddOption
}

// NewPoolMetrics makes the instruments of the pool called name, the value of
// the db.client.connection.pool.name attribute ("server:port/db" for a pool
// of connections to a database, as the conventions suggest; any name unique
// in the program otherwise). It fails on a name that is not UTF-8, a bad
// option, or an instrument the Meter refuses to make.
//
// An empty name means the pool's own, its Config.Name, so that the name is
// written once: the hooks read it from each event, Observe from its pool's
// Stats. Each name's attributes are made once, when it is first seen, and
// each measurement carries the name of the pool it comes from: hooks shared
// by several pools, or an Observe of a pool other than the one the hooks
// serve, measure each under its own name. A name given wins over the
// pools' own. The hooks panic, and Observe fails, for a pool with no
// Config.Name, or one that is not UTF-8 (see Hooks and Observe).
func NewPoolMetrics(name string, opts ...Option) (*PoolMetrics, error) {
	if err := checkUTF8("pool", name); err != nil {
		return nil, err
	}
	c, err := applyOptions(opts)
	if err != nil {
		return nil, err
	}
	m := &PoolMetrics{cfg: c, name: name}
	meter := c.meter()
	var errs [3]error
	m.waitTime, errs[0] = c.durationHistogram(meter, "db.client.connection.wait_time",
		"The time it took to obtain an open connection from the pool.")
	m.createTime, errs[1] = c.durationHistogram(meter, "db.client.connection.create_time",
		"The time it took to create a new connection.")
	m.timeouts, errs[2] = meter.Int64Counter("db.client.connection.timeouts",
		metric.WithDescription("The number of connection timeouts that have occurred trying to obtain a connection from the pool."),
		metric.WithUnit("{timeout}"))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	if err := nilInstrument("db.client.connection.wait_time", m.waitTime,
		"db.client.connection.create_time", m.createTime, "db.client.connection.timeouts", m.timeouts); err != nil {
		return nil, err
	}
	if name != "" {
		m.named = m.opts(name)
	} else {
		m.own = &byName[*poolOpts]{make: func(name string) *poolOpts {
			if name == "" {
				panic(`ctxsyncotel: the hooks of NewPoolMetrics("") told of a pool with no Config.Name: name the pool, or give NewPoolMetrics a name`)
			}
			if !utf8.ValidString(name) {
				panic(fmt.Sprintf(`ctxsyncotel: the hooks of NewPoolMetrics("") told of a pool whose Config.Name %q is not UTF-8`, name))
			}
			return m.opts(name)
		}}
	}
	return m, nil
}

func (m *PoolMetrics) opts(name string) *poolOpts {
	s := m.set(name)
	return &poolOpts{recordOpts(s), addOpts(s)}
}

// ownOf returns the options of the pool named name, for metrics made with
// no name.
func (m *PoolMetrics) ownOf(name string) *poolOpts {
	// byName.get by hand: the generic call is not inlined, and this is
	// every event's path.
	if f := m.own.first.Load(); f != nil && f.name == name {
		return f.v
	}
	return m.own.slow(name)
}

func (m *PoolMetrics) set(name string, kvs ...attribute.KeyValue) attribute.Set {
	return m.cfg.set(append([]attribute.KeyValue{semconv.DBClientConnectionPoolName(name)}, kvs...)...)
}

func (m *PoolMetrics) check() {
	if m == nil || m.cfg == nil {
		panic("ctxsyncotel: use NewPoolMetrics; a nil or zero *PoolMetrics is not usable")
	}
}

// Hooks returns hooks that feed m's histograms and counters and then call
// next's, each of which may be nil: the way to keep hooks of one's own. Set
// the result as the pool's Config.Hooks before pool.New.
//
// OnAcquire records in db.client.connection.wait_time the wait of every
// Acquire that found no idle resource and waited, for a release or for a new
// resource, failed ones included; and counts those whose error is
// context.DeadlineExceeded (errors.Is) in db.client.connection.timeouts.
// Acquires served by an idle resource at once are not recorded: they waited
// for nothing (the pool reads no clock for them), and a histogram's record
// would triple the cost of the pool's fastest path. ctxsync.pool.acquires
// counts them with the others; ctxsync.pool.empty_acquires counts the
// Acquires recorded, and those whose ctx ended before they could wait.
//
// OnCreate records the duration of each call to Config.New that made a
// resource in db.client.connection.create_time. The other hooks are next's:
// Observe has their counts, from Stats.
//
// The pool's hooks report no time between Acquire and Release, so
// db.client.connection.use_time is not measured.
//
// next's hooks run once for each event, after ours, even if ours panics or
// calls runtime.Goexit (a MeterProvider that breaks down): the panic then
// goes on, once next's hook has returned.
//
// Made with no name, the hooks measure each event under the event's Name,
// the pool's Config.Name; told of an event of a pool with no name (or one
// that is not UTF-8), they panic, after calling next, at the first event of
// the pool, in the goroutine of the event: for OnCreate the pool's own,
// where a panic ends the program (see pool.Pool). Name the pool, or give
// NewPoolMetrics a name.
func (m *PoolMetrics) Hooks(next pool.Hooks) pool.Hooks {
	m.check()
	h := next
	onAcquire, onCreate := next.OnAcquire, next.OnCreate
	h.OnAcquire = func(e pool.AcquireEvent) {
		if onAcquire != nil {
			// Deferred, so that the user's hook runs once even if ours
			// panics or calls runtime.Goexit (a Meter that breaks down,
			// or a pool with no name): a program that counts its own
			// events must not lose one to its metrics. In a closure, so
			// that a recover called in the user's hook cannot take our
			// panic: it is not called by a deferred call.
			defer func() { onAcquire(e) }()
		}
		o := m.named
		if m.own != nil {
			// Looked up even for an event that records nothing, so
			// that a pool with no name shows at its first event.
			o = m.ownOf(e.Name)
		}
		if e.Waited {
			m.waitTime.Record(context.Background(), e.Wait.Seconds(), o.rec...)
		}
		if e.Err != nil && errors.Is(e.Err, context.DeadlineExceeded) {
			m.timeouts.Add(context.Background(), 1, o.add...)
		}
	}
	h.OnCreate = func(e pool.CreateEvent) {
		if onCreate != nil {
			defer func() { onCreate(e) }() // as OnAcquire's
		}
		o := m.named
		if m.own != nil {
			o = m.ownOf(e.Name)
		}
		if e.Err == nil {
			m.createTime.Record(context.Background(), e.Duration.Seconds(), o.rec...)
		}
	}
	return h
}

// Observe registers a callback that reads p.Stats at each collection and
// reports it to the asynchronous instruments (see the package doc). It
// returns the registration, whose Unregister stops it. A PoolMetrics observes
// one pool at a time: Observe fails while an earlier registration is in
// force, as it does for a nil p, for metrics made with no name of a pool
// with no Config.Name, or for an instrument the Meter refuses to make. It
// reads p once, and with it p's own name, if m has none: it panics with p's
// panic if p is the zero Pool.
//
// The counters never go down: a pool observed under a name once the
// registration of another ended (a pool made anew on a reload) adds its
// counts to theirs, and the same pool observed again carries on.
func (m *PoolMetrics) Observe(p PoolSource) (metric.Registration, error) {
	m.check()
	if isNil(p) {
		return nil, errors.New("ctxsyncotel: PoolMetrics.Observe of a nil pool")
	}
	// Read once here, so that a pool not made by pool.New panics in the
	// caller's goroutine, not at a collection in the exporter's.
	name := p.Stats().Name
	if m.name != "" {
		name = m.name // given, it wins
	} else if name == "" {
		return nil, errors.New(`ctxsyncotel: PoolMetrics.Observe of a pool with no Config.Name, for metrics made by NewPoolMetrics(""): name the pool, or give NewPoolMetrics a name`)
	} else if err := checkUTF8("pool", name); err != nil {
		return nil, err
	}
	if !m.observed.CompareAndSwap(false, true) {
		return nil, errors.New("ctxsyncotel: PoolMetrics.Observe: pool " + name + " is observed already")
	}
	free := true
	defer func() {
		// Refused, or the Meter panicked: with no registration to
		// Unregister, m would be observed for good.
		if free {
			m.observed.Store(false)
		}
	}()
	reg, err := registered(m.observe(p, name))
	if err != nil {
		return nil, err
	}
	free = false
	return &registration{Registration: reg, release: &m.observed}, nil
}

// poolCounts are the counters read from Stats, in the order the callback
// of observe puts them: the acquires, empty acquires, waits and canceled
// acquires; the wait duration, in nanoseconds; the resources created, the
// failures to create and the errors of Close; the resources closed, by
// reason (idle, lifetime, health, destroy, pool).
type poolCounts [13]int64

func (m *PoolMetrics) observe(p PoolSource, name string) (metric.Registration, error) {
	meter := m.cfg.meter()
	conns := func(name, desc string) (metric.Int64ObservableUpDownCounter, error) {
		return meter.Int64ObservableUpDownCounter(name, metric.WithDescription(desc), metric.WithUnit("{connection}"))
	}
	counter := func(name, desc, unit string) (metric.Int64ObservableCounter, error) {
		return meter.Int64ObservableCounter(name, metric.WithDescription(desc), metric.WithUnit(unit))
	}
	var (
		count, maxConns, minIdle, pending, constructing, closing metric.Int64ObservableUpDownCounter
		acquires, empty, waits, canceled                         metric.Int64ObservableCounter
		created, closed, failures, closeErrs                     metric.Int64ObservableCounter
		waited                                                   metric.Float64ObservableCounter
		errs                                                     [15]error
	)
	count, errs[0] = conns("db.client.connection.count",
		"The number of connections that are currently in state described by the `state` attribute.")
	maxConns, errs[1] = conns("db.client.connection.max", "The maximum number of open connections allowed.")
	pending, errs[2] = meter.Int64ObservableUpDownCounter("db.client.connection.pending_requests",
		metric.WithDescription("The number of current pending requests for an open connection."),
		metric.WithUnit("{request}"))
	constructing, errs[3] = conns("ctxsync.pool.connection.constructing", "Calls to the pool's New under way.")
	closing, errs[4] = conns("ctxsync.pool.connection.closing", "Calls to the pool's Close under way.")
	acquires, errs[5] = counter("ctxsync.pool.acquires", "Acquires and TryAcquires that returned a connection.", "{acquire}")
	empty, errs[6] = counter("ctxsync.pool.empty_acquires", "Acquires that found no idle connection.", "{acquire}")
	waits, errs[7] = counter("ctxsync.pool.waits", "Acquires that waited, for a release or a new connection.", "{acquire}")
	canceled, errs[8] = counter("ctxsync.pool.canceled_acquires", "Acquires that returned their context's error, not counting those whose context was done at the call.", "{acquire}")
	waited, errs[9] = meter.Float64ObservableCounter("ctxsync.pool.wait_duration",
		metric.WithDescription("The time the Acquires counted in ctxsync.pool.waits waited, in all."),
		metric.WithUnit("s"))
	created, errs[10] = counter("ctxsync.pool.connection.created", "Connections made.", "{connection}")
	closed, errs[11] = counter("ctxsync.pool.connection.closed", "Connections closed, by the reason in ctxsync.pool.close.reason.", "{connection}")
	failures, errs[12] = counter("ctxsync.pool.connection.create_failures", "Calls to the pool's New that failed, or that its breaker refused.", "{failure}")
	minIdle, errs[14] = conns("db.client.connection.idle.min", "The minimum number of idle open connections allowed.")
	closeErrs, errs[13] = counter("ctxsync.pool.connection.close_errors", "Calls to the pool's Close that returned an error.", "{error}")
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}

	all := observeOpts(m.set(name))
	idle := observeOpts(m.set(name, semconv.DBClientConnectionStateIdle))
	used := observeOpts(m.set(name, semconv.DBClientConnectionStateUsed))
	var reasons [pool.ClosedPool + 1][]metric.ObserveOption
	for r := pool.ClosedIdle; r <= pool.ClosedPool; r++ {
		reasons[r] = observeOpts(m.set(name, attribute.String("ctxsync.pool.close.reason", r.String())))
	}
	counts := m.counts.of(name, len(poolCounts{}))
	undo := counts.observing(p)
	kept := false
	defer func() {
		if !kept {
			undo() // refused, or the Meter panicked: p is not read
		}
	}()
	reg, err := registered(meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		seq := counts.start()
		s := p.Stats()
		o.ObserveInt64(count, int64(s.Idle), idle...)
		o.ObserveInt64(count, int64(s.InUse), used...)
		o.ObserveInt64(maxConns, int64(s.Max), all...)
		o.ObserveInt64(minIdle, int64(s.MinIdle), all...)
		o.ObserveInt64(pending, int64(s.Waiting), all...)
		o.ObserveInt64(constructing, int64(s.Constructing), all...)
		o.ObserveInt64(closing, int64(s.Closing), all...)
		n := poolCounts{
			s.AcquireCount, s.EmptyAcquires, s.WaitCount, s.CanceledAcquires, int64(s.WaitDuration),
			s.Created, s.CreateFailures, s.CloseErrors,
			s.ClosedIdle, s.ClosedLifetime, s.ClosedHealth, s.ClosedDestroy, s.ClosedPool,
		}
		counts.apply(seq, n[:])
		o.ObserveInt64(acquires, n[0], all...)
		o.ObserveInt64(empty, n[1], all...)
		o.ObserveInt64(waits, n[2], all...)
		o.ObserveInt64(canceled, n[3], all...)
		o.ObserveFloat64(waited, time.Duration(n[4]).Seconds(), all...)
		o.ObserveInt64(created, n[5], all...)
		o.ObserveInt64(failures, n[6], all...)
		o.ObserveInt64(closeErrs, n[7], all...)
		for i, r := range [...]pool.CloseReason{pool.ClosedIdle, pool.ClosedLifetime, pool.ClosedHealth, pool.ClosedDestroy, pool.ClosedPool} {
			o.ObserveInt64(closed, n[8+i], reasons[r]...)
		}
		return nil
	}, count, maxConns, minIdle, pending, constructing, closing, acquires, empty, waits, canceled,
		waited, created, failures, closeErrs, closed))
	kept = err == nil
	return reg, err
}
