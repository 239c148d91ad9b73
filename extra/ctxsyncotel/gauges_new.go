package ctxsyncotel

import (
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The name attributes of the instruments of the newer primitives.
const (
	FlightNameKey    = attribute.Key("ctxsync.flight.name")
	KeyedLockNameKey = attribute.Key("ctxsync.keyedlock.name")
	WaitGroupNameKey = attribute.Key("ctxsync.waitgroup.name")
	WatchNameKey     = attribute.Key("ctxsync.watch.name")
	AdaptiveNameKey  = attribute.Key("ctxsync.adaptive.name")
)

// A LenSource is what ObserveFlight and ObserveKeyedLock read: a
// *ctxsync.Flight or a *ctxsync.KeyedLock, of any type parameters.
type LenSource interface {
	Len() int
}

// A WaitGroupSource is what ObserveWaitGroup reads: a *ctxsync.WaitGroup.
type WaitGroupSource interface {
	Count() int
}

// A WatchSource is what ObserveWatch reads: a *ctxsync.Watch, of any T.
type WatchSource interface {
	Version() uint64
}

// An AdaptiveSource is what ObserveAdaptiveLimiter reads: an
// *adaptive.Limiter.
type AdaptiveSource interface {
	Limit() int
	InFlight() int
	Waiting() int
	Shed() int64
	Latency() time.Duration
}

// observeInt registers one observable instrument made by mk, read by get at
// each collection.
func observeInt(fn, what, name string, src any, get func() int64, opts []Option,
	mk func(metric.Meter) (metric.Int64Observable, error),
) (metric.Registration, error) {
	return observe(fn, what, name, src, func() { get() }, opts, func(m metric.Meter) (metric.Int64Observable, []metric.Observable, error) {
		inst, err := mk(m)
		return inst, []metric.Observable{inst}, err
	}, func(all []metric.ObserveOption) func(metric.Observer, metric.Int64Observable) {
		return func(o metric.Observer, inst metric.Int64Observable) {
			o.ObserveInt64(inst, get(), all...)
		}
	})
}

// ObserveFlight registers a callback that reads f at each collection and
// reports ctxsync.flight.calls (calls in flight that a Do would join), with
// the ctxsync.flight.name attribute set to name. It returns the
// registration, whose Unregister stops it. It fails on an empty name or one
// that is not UTF-8, a nil f, a bad option, or an instrument the Meter
// refuses to make.
func ObserveFlight(name string, f LenSource, opts ...Option) (metric.Registration, error) {
	return observeInt("ObserveFlight", "flight", name, f, func() int64 { return int64(f.Len()) }, opts,
		func(m metric.Meter) (metric.Int64Observable, error) {
			return m.Int64ObservableUpDownCounter("ctxsync.flight.calls",
				metric.WithDescription("Calls in flight that a Do would join now."), metric.WithUnit("{call}"))
		})
}

// ObserveKeyedLock registers a callback that reads k at each collection and
// reports ctxsync.keyedlock.keys (keys held or waited for), with the
// ctxsync.keyedlock.name attribute set to name. It fails as ObserveFlight.
func ObserveKeyedLock(name string, k LenSource, opts ...Option) (metric.Registration, error) {
	return observeInt("ObserveKeyedLock", "keyedlock", name, k, func() int64 { return int64(k.Len()) }, opts,
		func(m metric.Meter) (metric.Int64Observable, error) {
			return m.Int64ObservableUpDownCounter("ctxsync.keyedlock.keys",
				metric.WithDescription("Keys held or waited for now."), metric.WithUnit("{key}"))
		})
}

// ObserveWaitGroup registers a callback that reads wg at each collection and
// reports ctxsync.waitgroup.count (its counter), with the
// ctxsync.waitgroup.name attribute set to name. It fails as ObserveFlight.
func ObserveWaitGroup(name string, wg WaitGroupSource, opts ...Option) (metric.Registration, error) {
	return observeInt("ObserveWaitGroup", "waitgroup", name, wg, func() int64 { return int64(wg.Count()) }, opts,
		func(m metric.Meter) (metric.Int64Observable, error) {
			return m.Int64ObservableUpDownCounter("ctxsync.waitgroup.count",
				metric.WithDescription("The WaitGroup's counter now: tasks added and not yet done."), metric.WithUnit("{task}"))
		})
}

// ObserveWatch registers a callback that reads w at each collection and
// reports ctxsync.watch.version, with the ctxsync.watch.name attribute set
// to name: a counter, since the version only grows, by one per Store, so
// that its rate is how often the value changes. It fails as ObserveFlight.
//
// The counter never goes down, but for a name whose counts were dropped
// (see below): a Watch observed under the name (with the same MeterProvider
// and attributes) once the registration of another ended
// (a Watch made anew on a reload) adds its version to the count, and the
// same Watch observed again carries on. While two registrations under one
// name are in force, the Watch observed last is the one counted; once its
// registration ends, the one observed before it, if still in force, is
// counted again from where its count was, from the next collection on: one
// callback reports the name, as ObserveSemaphore's does.
//
// What the counter counted under a name (of a MeterProvider, with its
// attributes) is kept while a registration under it is in force, and, once
// the last ends, among the names of ObserveWatch whose last registrations
// ended most recently: as many of those as the most names (of any
// provider) that had a registration in force at once, and at least 1024.
// The count of a name that ended longer ago is dropped, so that a program
// observing Watches under ever new names holds no more than that: such a
// name observed again counts from its Watch's own version, as a new name
// does, and the counter, where a back end still holds the name's series,
// shows a fall, a reset. A Watch made anew on a reload and observed before
// the old one's registration ends (the hand-over above) carries the counter
// on whatever the names observed meanwhile. The global MeterProvider (no
// WithMeterProvider) before otel.SetMeterProvider and the provider set then,
// whose series are one, count as one (see ObserveSemaphore).
func ObserveWatch(name string, w WatchSource, opts ...Option) (metric.Registration, error) {
	version := func() int64 { return int64(min(w.Version(), 1<<63-1)) }
	return observeCounting("ObserveWatch", "watch", name, w, func() { version() }, opts, &watchCounters, 1,
		func(m metric.Meter) (metric.Int64ObservableCounter, []metric.Observable, error) {
			inst, err := m.Int64ObservableCounter("ctxsync.watch.version",
				metric.WithDescription("The Watch's version: 1, plus one per Store."), metric.WithUnit("{version}"))
			return inst, []metric.Observable{inst}, err
		},
		func(all []metric.ObserveOption, counts *counters, token uint64) func(metric.Observer, metric.Int64ObservableCounter) {
			return func(o metric.Observer, inst metric.Int64ObservableCounter) {
				seq := counts.start()
				v := [1]int64{version()}
				counts.applyFrom(token, seq, v[:])
				o.ObserveInt64(inst, v[0], all...)
			}
		})
}

// ObserveAdaptiveLimiter registers a callback that reads l at each
// collection and reports ctxsync.adaptive.limit, .in_flight and .waiting
// (now), ctxsync.adaptive.shed (calls shed, a counter) and
// ctxsync.adaptive.latency (the baseline latency the algorithm measures
// against, in seconds), with the ctxsync.adaptive.name attribute set to name.
// It fails as ObserveFlight. The shed counter never goes down, as
// ObserveWatch's version: a Limiter observed under the name once the
// registration of another ended adds its count to it. Its counts are kept
// as ObserveWatch's are (see ObserveWatch), on a list of ended names of its
// own: a name whose last registration ended before those of 1024 other
// names of ObserveAdaptiveLimiter (or of as many as had a registration in
// force at once, if more), observed again, counts from its Limiter's own
// counts, as a new name does.
func ObserveAdaptiveLimiter(name string, l AdaptiveSource, opts ...Option) (metric.Registration, error) {
	read := func() { l.Limit(); l.InFlight(); l.Waiting(); l.Shed(); l.Latency() }
	type instruments struct {
		limit, inFlight, waiting metric.Int64ObservableUpDownCounter
		shed                     metric.Int64ObservableCounter
		latency                  metric.Float64ObservableGauge
	}
	return observeCounting("ObserveAdaptiveLimiter", "adaptive", name, l, read, opts, &adaptiveCounters, 1, func(m metric.Meter) (in instruments, _ []metric.Observable, _ error) {
		var errs [5]error
		in.limit, errs[0] = m.Int64ObservableUpDownCounter("ctxsync.adaptive.limit",
			metric.WithDescription("Calls the limiter lets in flight now."), metric.WithUnit("{call}"))
		in.inFlight, errs[1] = m.Int64ObservableUpDownCounter("ctxsync.adaptive.in_flight",
			metric.WithDescription("Calls in flight now."), metric.WithUnit("{call}"))
		in.waiting, errs[2] = m.Int64ObservableUpDownCounter("ctxsync.adaptive.waiting",
			metric.WithDescription("Calls waiting for a slot now."), metric.WithUnit("{call}"))
		in.shed, errs[3] = m.Int64ObservableCounter("ctxsync.adaptive.shed",
			metric.WithDescription("Calls shed with ErrShed."), metric.WithUnit("{call}"))
		in.latency, errs[4] = m.Float64ObservableGauge("ctxsync.adaptive.latency",
			metric.WithDescription("The baseline latency the algorithm measures against."), metric.WithUnit("s"))
		return in, []metric.Observable{in.limit, in.inFlight, in.waiting, in.shed, in.latency}, errors.Join(errs[:]...)
	}, func(all []metric.ObserveOption, counts *counters, token uint64) func(metric.Observer, instruments) {
		return func(o metric.Observer, in instruments) {
			seq := counts.start()
			n := [1]int64{l.Shed()}
			counts.applyFrom(token, seq, n[:])
			o.ObserveInt64(in.limit, int64(l.Limit()), all...)
			o.ObserveInt64(in.inFlight, int64(l.InFlight()), all...)
			o.ObserveInt64(in.waiting, int64(l.Waiting()), all...)
			o.ObserveInt64(in.shed, n[0], all...)
			o.ObserveFloat64(in.latency, l.Latency().Seconds(), all...)
		}
	})
}
