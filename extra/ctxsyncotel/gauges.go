package ctxsyncotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The name attributes of the primitives' instruments.
const (
	SemaphoreNameKey = attribute.Key("ctxsync.semaphore.name")
	WeightedNameKey  = attribute.Key("ctxsync.weighted.name")
	QueueNameKey     = attribute.Key("ctxsync.queue.name")
	QueueSideKey     = attribute.Key("ctxsync.queue.side") // get or put, of ctxsync.queue.waiting
	LockNameKey      = attribute.Key("ctxsync.lock.name")
)

// A SemaphoreSource is what ObserveSemaphore reads: a *ctxsync.Semaphore or
// a *ctxsync.BoundedSemaphore.
type SemaphoreSource interface {
	Available() int
	Waiting() int
}

// A WeightedSource is what ObserveWeighted reads: a *ctxsync.Weighted.
type WeightedSource interface {
	Capacity() int64
	Available() int64
	Waiting() int
}

// A QueueSource is what ObserveQueue reads: a *ctxsync.Queue[T] or a
// *ctxsync.PriorityQueue[T] of any T.
type QueueSource interface {
	Len() int
	Unfinished() int
	Cap() int     // 0 if unbounded
	Getters() int // goroutines waiting in Get
	Putters() int // goroutines waiting in Put
}

// A LockSource is what ObserveLock reads: a *ctxsync.Lock, *ctxsync.RWLock
// or *ctxsync.Condition. If it also has a method Locked() bool, as Lock and
// Condition do, whether it is held is reported too.
type LockSource interface {
	Waiting() int
}

// ObserveLock registers a callback that reads l at each collection and
// reports ctxsync.lock.waiting (goroutines waiting for it) and, if l has a
// method Locked() bool, ctxsync.lock.held (1 while it is held, else 0), with
// the ctxsync.lock.name attribute set to name. It returns the registration,
// whose Unregister stops it. It fails on an empty name or one that is not
// UTF-8, a nil l, a bad option, or an instrument the Meter refuses to make:
// ctxsync.lock.held is made for an l with no Locked method too (it then
// reports no point), since the callback that reports the name may be this
// registration's for a later one whose source has it (see ObserveSemaphore).
func ObserveLock(name string, l LockSource, opts ...Option) (metric.Registration, error) {
	locked, _ := l.(interface{ Locked() bool })
	read := func() {
		l.Waiting()
		if locked != nil {
			locked.Locked()
		}
	}
	type instruments struct {
		waiting metric.Int64ObservableUpDownCounter
		held    metric.Int64ObservableGauge
	}
	return observe("ObserveLock", "lock", name, l, read, opts, func(m metric.Meter) (in instruments, _ []metric.Observable, err error) {
		in.waiting, err = m.Int64ObservableUpDownCounter("ctxsync.lock.waiting",
			metric.WithDescription("Goroutines waiting for the lock now."), metric.WithUnit("{waiter}"))
		if err != nil {
			return in, nil, err
		}
		// Made for a source with no Locked method too, which reports none:
		// the callback that reports the series may be that of another
		// registration under it (see series.go), whose source has one.
		in.held, err = m.Int64ObservableGauge("ctxsync.lock.held",
			metric.WithDescription("1 while the lock is held, else 0."), metric.WithUnit("1"))
		if err != nil {
			return in, nil, err
		}
		return in, []metric.Observable{in.waiting, in.held}, nil
	}, func(all []metric.ObserveOption) func(metric.Observer, instruments) {
		return func(o metric.Observer, in instruments) {
			o.ObserveInt64(in.waiting, int64(l.Waiting()), all...)
			if locked != nil {
				v := int64(0)
				if locked.Locked() {
					v = 1
				}
				o.ObserveInt64(in.held, v, all...)
			}
		}
	})
}

// ObserveSemaphore registers a callback that reads s at each collection and
// reports ctxsync.semaphore.available and ctxsync.semaphore.waiting, with
// the ctxsync.semaphore.name attribute set to name. It returns the
// registration, whose Unregister stops it. It fails on an empty name or one
// that is not UTF-8, a nil s, a bad option, or an instrument the Meter
// refuses to make.
//
// While two registrations under one name (with the same MeterProvider and
// attributes) are in force, the one made last (whose Observe completed last)
// reports, alone: a semaphore made anew on a reload and observed under the
// old one's name takes its series over. Once it ends, the one made before
// it, if still in force, reports again, from the next collection on. One
// callback reports the series, reading the semaphore of the newest
// registration in force, so that no collection finds it reported twice (the
// SDK would add the two up), or by none while a registration is in force:
// the hand-over at an Observe or an Unregister is one step, which a
// collection sees whole, and the callback itself changes only while no
// registration is in force (the SDK registers and unregisters callbacks
// between collections). That callback is the one of the registration made
// first (whose Observe returned first) while none was in force under the
// name: its Unregister, while a later one is in force or its Observe under
// way, leaves it registered with the Meter, reporting for the others, and
// the last registration's Unregister unregisters it, and returns its error
// too (or, if an Observe under the name is under way then, and fails, that
// Observe does). An Unregister that fails, the Meter having refused to
// unregister a callback, has taken the registration out of the series all
// the same; called again, it tries the Meter again. So do the other Observe
// functions of the primitives.
//
// A series is a MeterProvider's. The global provider (no
// WithMeterProvider) reports nowhere until the first otel.SetMeterProvider
// of the process, and from then on to the provider set then, into the same
// series of the SDK as that provider's own. So a semaphore observed through
// the global provider and another under the same name through that provider
// (given by WithMeterProvider, or the global one since), in either order,
// before or after otel.SetMeterProvider, are registrations of one series:
// the one made last reports. Before otel.SetMeterProvider they are two
// series; the first Observe or collection after it merges them, before
// either reports to the provider set. From then on the newest registration
// of the two reports, and ObserveWatch's counter carries on from what it
// showed: a Watch observed through the global provider before then, which
// reported nowhere, is counted when its registration is the newest in
// force, as a Watch observed later would be. Only a collection that runs
// while otel.SetMeterProvider itself is under way may report the two added
// up, once.
//
// To find the provider set, the package asks the global provider, and the
// provider that is the global one now, for their Meters, at Observe calls
// and at collections, until the two give the same one. So that provider's
// Meter may run inside a collection of any provider the package reports
// to: it must not register or unregister a callback with the provider
// being collected, nor collect it. The provider set is found only if its
// Meter of a scope is one value, as the SDK's is, and only while it is the
// global one: if otel.SetMeterProvider is called again before an Observe or
// a collection follows the first, the series of the global provider and of
// the first provider set stay apart, and the SDK adds them up. So do those
// of two providers that give one Meter (a provider of the user's that
// embeds the SDK's and gives its Meters): a series is keyed by its
// provider, not by the Meter.
func ObserveSemaphore(name string, s SemaphoreSource, opts ...Option) (metric.Registration, error) {
	type instruments struct {
		avail, waiting metric.Int64ObservableUpDownCounter
	}
	return observe("ObserveSemaphore", "semaphore", name, s, func() { s.Available(); s.Waiting() }, opts, func(m metric.Meter) (in instruments, _ []metric.Observable, _ error) {
		var err1, err2 error
		in.avail, err1 = m.Int64ObservableUpDownCounter("ctxsync.semaphore.available",
			metric.WithDescription("Permits free now."), metric.WithUnit("{permit}"))
		in.waiting, err2 = m.Int64ObservableUpDownCounter("ctxsync.semaphore.waiting",
			metric.WithDescription("Goroutines waiting for a permit now."), metric.WithUnit("{waiter}"))
		return in, []metric.Observable{in.avail, in.waiting}, errors.Join(err1, err2)
	}, func(all []metric.ObserveOption) func(metric.Observer, instruments) {
		return func(o metric.Observer, in instruments) {
			o.ObserveInt64(in.avail, int64(s.Available()), all...)
			o.ObserveInt64(in.waiting, int64(s.Waiting()), all...)
		}
	})
}

// ObserveWeighted registers a callback that reads w at each collection and
// reports ctxsync.weighted.capacity, ctxsync.weighted.available and
// ctxsync.weighted.waiting, with the ctxsync.weighted.name attribute set to
// name; never more units available than capacity, even while w is resized.
// It returns the registration, whose Unregister stops it. It fails on an
// empty name or one that is not UTF-8, a nil w, a bad option, or an
// instrument the Meter refuses to make.
func ObserveWeighted(name string, w WeightedSource, opts ...Option) (metric.Registration, error) {
	type instruments struct {
		capacity, avail, waiting metric.Int64ObservableUpDownCounter
	}
	return observe("ObserveWeighted", "weighted", name, w, func() { w.Capacity(); w.Available(); w.Waiting() }, opts, func(m metric.Meter) (in instruments, _ []metric.Observable, _ error) {
		var err1, err2, err3 error
		in.capacity, err1 = m.Int64ObservableUpDownCounter("ctxsync.weighted.capacity",
			metric.WithDescription("The capacity of the weighted semaphore, in its units."), metric.WithUnit("{unit}"))
		in.avail, err2 = m.Int64ObservableUpDownCounter("ctxsync.weighted.available",
			metric.WithDescription("Units free now."), metric.WithUnit("{unit}"))
		in.waiting, err3 = m.Int64ObservableUpDownCounter("ctxsync.weighted.waiting",
			metric.WithDescription("Goroutines waiting for units now."), metric.WithUnit("{waiter}"))
		return in, []metric.Observable{in.capacity, in.avail, in.waiting}, errors.Join(err1, err2, err3)
	}, func(all []metric.ObserveOption) func(metric.Observer, instruments) {
		return func(o metric.Observer, in instruments) {
			c, a := weightedPair(w)
			o.ObserveInt64(in.capacity, c, all...)
			o.ObserveInt64(in.avail, a, all...)
			o.ObserveInt64(in.waiting, int64(w.Waiting()), all...)
		}
	})
}

// weightedPair reads w's capacity and free units as a pair that keeps
// available <= capacity, as every moment of a Weighted does: capacity -
// available is the units held. Two reads apart do not keep it: a Resize
// that grows w between them gives the old capacity beside the new free
// units, and one half done (Resize sets the capacity before it takes the
// units away) gives the new, smaller capacity beside the old free units.
// So the capacity is read on both sides of the free units, and all three
// read again while it moved; after a few tries, each spoiled by a Resize,
// the free units are cut to the capacity: a Resize under way leaves them
// no more than that as it ends.
func weightedPair(w WeightedSource) (capacity, available int64) {
	for range 4 {
		before := w.Capacity()
		available = w.Available()
		capacity = w.Capacity()
		if before == capacity && available <= capacity {
			return capacity, available
		}
	}
	return capacity, min(available, capacity)
}

// ObserveQueue registers a callback that reads q at each collection and
// reports ctxsync.queue.length (items in the queue) and
// ctxsync.queue.unfinished (items put and not yet TaskDone), with the
// ctxsync.queue.name attribute set to name; never a length above the
// unfinished tasks, even while consumers finish them. It returns the
// registration, whose Unregister stops it. It fails on an empty name or one
// that is not UTF-8, a nil q, a bad option, or an instrument the Meter
// refuses to make.
func ObserveQueue(name string, q QueueSource, opts ...Option) (metric.Registration, error) {
	type instruments struct {
		length, unfinished, capacity, waiting metric.Int64ObservableUpDownCounter
	}
	return observe("ObserveQueue", "queue", name, q, func() { q.Len(); q.Unfinished(); q.Cap(); q.Getters(); q.Putters() }, opts, func(m metric.Meter) (in instruments, _ []metric.Observable, _ error) {
		var errs [4]error
		in.length, errs[0] = m.Int64ObservableUpDownCounter("ctxsync.queue.length",
			metric.WithDescription("Items in the queue now."), metric.WithUnit("{item}"))
		in.unfinished, errs[1] = m.Int64ObservableUpDownCounter("ctxsync.queue.unfinished",
			metric.WithDescription("Items put and not yet marked done."), metric.WithUnit("{item}"))
		in.capacity, errs[2] = m.Int64ObservableUpDownCounter("ctxsync.queue.capacity",
			metric.WithDescription("The most items the queue holds; 0 if unbounded."), metric.WithUnit("{item}"))
		in.waiting, errs[3] = m.Int64ObservableUpDownCounter("ctxsync.queue.waiting",
			metric.WithDescription("Goroutines waiting now, by side: get (consumers starved of items), put (producers held back by a full queue)."),
			metric.WithUnit("{waiter}"))
		return in, []metric.Observable{in.length, in.unfinished, in.capacity, in.waiting}, errors.Join(errs[:]...)
	}, func(all []metric.ObserveOption) func(metric.Observer, instruments) {
		// Made once: the side is merged into the queue's attributes.
		getters := append(all[:len(all):len(all)], metric.WithAttributes(QueueSideKey.String("get")))
		putters := append(all[:len(all):len(all)], metric.WithAttributes(QueueSideKey.String("put")))
		return func(o metric.Observer, in instruments) {
			l, u := queuePair(q)
			o.ObserveInt64(in.length, int64(l), all...)
			o.ObserveInt64(in.unfinished, int64(u), all...)
			o.ObserveInt64(in.capacity, int64(q.Cap()), all...)
			o.ObserveInt64(in.waiting, int64(q.Getters()), getters...)
			o.ObserveInt64(in.waiting, int64(q.Putters()), putters...)
		}
	})
}

// queuePair reads q's length and unfinished tasks as a pair that keeps
// length <= unfinished, as every moment of a queue does (an item in the
// queue is unfinished): unfinished - length is the tasks in progress. Two
// reads apart do not keep it: consumers that take items and mark them done
// between the reads leave fewer unfinished than the length read. So the two
// are read again while they disagree; after a few tries, each spoiled by
// consumers, the length is cut to the unfinished tasks, read last.
func queuePair(q QueueSource) (length, unfinished int) {
	for range 4 {
		length = q.Len()
		unfinished = q.Unfinished()
		if length <= unfinished {
			return length, unfinished
		}
	}
	return min(length, unfinished), unfinished
}

// observe, for the function fn, checks name, src and opts, reads src once
// with read, and registers the callback of the instruments of what, which
// mk makes and returns, with the list of them to register: the callback
// reports the series with the reader that reporter returns, given the
// options of the measurements, which reads src.
//
// Two registrations in force under one series (the same source observed
// twice, or one made anew on a reload observed before the old one's
// registration ends) would both report it, and the SDK would add them up:
// a semaphore of 4 permits would show 8 free. So the series is reported by
// one callback, which reads the source of the registration made last of
// those in force (see series.go).
func observe[I any](fn, what, name string, src any, read func(), opts []Option,
	mk func(metric.Meter) (I, []metric.Observable, error),
	reporter func(all []metric.ObserveOption) func(metric.Observer, I),
) (metric.Registration, error) {
	return observeCounting(fn, what, name, src, read, opts, gaugeSeries.of(what), 0, mk,
		func(all []metric.ObserveOption, _ *counters, _ uint64) func(metric.Observer, I) {
			return reporter(all)
		})
}

// observeCounting is observe for a source of which some instruments are
// counters, n of them, whose series' counters are kept in by: reporter is
// also given the counters and the number of the registration, for
// counters.applyFrom.
func observeCounting[I any](fn, what, name string, src any, read func(), opts []Option, by *seriesCounters, n int,
	mk func(metric.Meter) (I, []metric.Observable, error),
	reporter func(all []metric.ObserveOption, counts *counters, token uint64) func(metric.Observer, I),
) (_ metric.Registration, err error) {
	c, set, err := prepare(fn, what, name, src, read, opts)
	if err != nil {
		return nil, err
	}
	counts, token := by.arrive(c.provider, set, n)
	joined := false
	defer func() {
		// Refused, or the Meter panicked or called runtime.Goexit: src
		// is not read, and the series is as it was.
		if !joined {
			err = errors.Join(err, counts.abandon(token))
		}
	}()
	m := c.meter()
	insts, list, err := mk(m)
	if err != nil {
		return nil, err
	}
	var boxed any = insts // once, not at each collection
	reg, err := registered(m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		learnDelegate(false)
		counts.report(token, o, boxed)
		return nil
	}, list...))
	if err != nil {
		return nil, err
	}
	report := reporter(observeOpts(set), counts, token)
	counts.join(token, src, func(o metric.Observer, insts any) { report(o, insts.(I)) }, reg)
	joined = true
	return &seriesRegistration{counts: counts, token: token}, nil
}

// prepare checks name, src and opts for observe, reads src once with read,
// and returns the configuration and the attribute set of the measurements.
func prepare(fn, what, name string, src any, read func(), opts []Option) (*config, attribute.Set, error) {
	c, err := newConfig(what, name, opts)
	if err != nil {
		return nil, attribute.Set{}, err
	}
	if isNil(src) {
		return nil, attribute.Set{}, errors.New("ctxsyncotel: " + fn + " of a nil " + what)
	}
	// Read once here, so that a source that panics (a zero value that must
	// be made by its constructor) does so in the caller's goroutine, not at
	// a collection in the exporter's.
	read()
	key := attribute.Key("ctxsync." + what + ".name")
	return c, c.set(key.String(name)), nil
}
