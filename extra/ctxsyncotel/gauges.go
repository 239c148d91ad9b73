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
// UTF-8, a nil l, a bad option, or an instrument the Meter refuses to make.
func ObserveLock(name string, l LockSource, opts ...Option) (metric.Registration, error) {
	locked, _ := l.(interface{ Locked() bool })
	read := func() {
		l.Waiting()
		if locked != nil {
			locked.Locked()
		}
	}
	return observe("ObserveLock", "lock", name, l, read, opts, func(m metric.Meter, all []metric.ObserveOption, reported func() bool) (metric.Registration, error) {
		waiting, err := m.Int64ObservableUpDownCounter("ctxsync.lock.waiting",
			metric.WithDescription("Goroutines waiting for the lock now."), metric.WithUnit("{waiter}"))
		if err != nil {
			return nil, err
		}
		insts := []metric.Observable{waiting}
		var held metric.Int64ObservableGauge
		if locked != nil {
			held, err = m.Int64ObservableGauge("ctxsync.lock.held",
				metric.WithDescription("1 while the lock is held, else 0."), metric.WithUnit("1"))
			if err != nil {
				return nil, err
			}
			insts = append(insts, held)
		}
		return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			if !reported() {
				return nil // another registration reports the series
			}
			o.ObserveInt64(waiting, int64(l.Waiting()), all...)
			if locked != nil {
				v := int64(0)
				if locked.Locked() {
					v = 1
				}
				o.ObserveInt64(held, v, all...)
			}
			return nil
		}, insts...)
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
// attributes) are in force, the one made last reports, alone: a semaphore
// made anew on a reload and observed under the old one's name takes its
// series over. Once it ends, the one made before it, if still in force,
// reports again. So do the other Observe functions of the primitives.
func ObserveSemaphore(name string, s SemaphoreSource, opts ...Option) (metric.Registration, error) {
	return observe("ObserveSemaphore", "semaphore", name, s, func() { s.Available(); s.Waiting() }, opts, func(m metric.Meter, all []metric.ObserveOption, reported func() bool) (metric.Registration, error) {
		avail, err1 := m.Int64ObservableUpDownCounter("ctxsync.semaphore.available",
			metric.WithDescription("Permits free now."), metric.WithUnit("{permit}"))
		waiting, err2 := m.Int64ObservableUpDownCounter("ctxsync.semaphore.waiting",
			metric.WithDescription("Goroutines waiting for a permit now."), metric.WithUnit("{waiter}"))
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			if !reported() {
				return nil // another registration reports the series
			}
			o.ObserveInt64(avail, int64(s.Available()), all...)
			o.ObserveInt64(waiting, int64(s.Waiting()), all...)
			return nil
		}, avail, waiting)
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
	return observe("ObserveWeighted", "weighted", name, w, func() { w.Capacity(); w.Available(); w.Waiting() }, opts, func(m metric.Meter, all []metric.ObserveOption, reported func() bool) (metric.Registration, error) {
		capacity, err1 := m.Int64ObservableUpDownCounter("ctxsync.weighted.capacity",
			metric.WithDescription("The capacity of the weighted semaphore, in its units."), metric.WithUnit("{unit}"))
		avail, err2 := m.Int64ObservableUpDownCounter("ctxsync.weighted.available",
			metric.WithDescription("Units free now."), metric.WithUnit("{unit}"))
		waiting, err3 := m.Int64ObservableUpDownCounter("ctxsync.weighted.waiting",
			metric.WithDescription("Goroutines waiting for units now."), metric.WithUnit("{waiter}"))
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, err
		}
		return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			if !reported() {
				return nil // another registration reports the series
			}
			c, a := weightedPair(w)
			o.ObserveInt64(capacity, c, all...)
			o.ObserveInt64(avail, a, all...)
			o.ObserveInt64(waiting, int64(w.Waiting()), all...)
			return nil
		}, capacity, avail, waiting)
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
	return observe("ObserveQueue", "queue", name, q, func() { q.Len(); q.Unfinished(); q.Cap(); q.Getters(); q.Putters() }, opts, func(m metric.Meter, all []metric.ObserveOption, reported func() bool) (metric.Registration, error) {
		length, err1 := m.Int64ObservableUpDownCounter("ctxsync.queue.length",
			metric.WithDescription("Items in the queue now."), metric.WithUnit("{item}"))
		unfinished, err2 := m.Int64ObservableUpDownCounter("ctxsync.queue.unfinished",
			metric.WithDescription("Items put and not yet marked done."), metric.WithUnit("{item}"))
		capacity, err3 := m.Int64ObservableUpDownCounter("ctxsync.queue.capacity",
			metric.WithDescription("The most items the queue holds; 0 if unbounded."), metric.WithUnit("{item}"))
		waiting, err4 := m.Int64ObservableUpDownCounter("ctxsync.queue.waiting",
			metric.WithDescription("Goroutines waiting now, by side: get (consumers starved of items), put (producers held back by a full queue)."),
			metric.WithUnit("{waiter}"))
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			return nil, err
		}
		// Made once: the side is merged into the queue's attributes.
		getters := append(all[:len(all):len(all)], metric.WithAttributes(QueueSideKey.String("get")))
		putters := append(all[:len(all):len(all)], metric.WithAttributes(QueueSideKey.String("put")))
		return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			if !reported() {
				return nil // another registration reports the series
			}
			l, u := queuePair(q)
			o.ObserveInt64(length, int64(l), all...)
			o.ObserveInt64(unfinished, int64(u), all...)
			o.ObserveInt64(capacity, int64(q.Cap()), all...)
			o.ObserveInt64(waiting, int64(q.Getters()), getters...)
			o.ObserveInt64(waiting, int64(q.Putters()), putters...)
			return nil
		}, length, unfinished, capacity, waiting)
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
// with read, and has register make the instruments of what and register
// their callback, whose measurements take the options it is given. The
// callback must observe nothing while reported returns false.
//
// Two registrations in force under one series (the same source observed
// twice, or one made anew on a reload observed before the old one's
// registration ends) would both report it, and the SDK would add them up:
// a semaphore of 4 permits would show 8 free. So only the registration made
// last reports, as ObserveWatch's counter does, and once it ends the one
// made before it, if still in force, reports again.
func observe(fn, what, name string, src any, read func(), opts []Option,
	register func(m metric.Meter, all []metric.ObserveOption, reported func() bool) (metric.Registration, error),
) (metric.Registration, error) {
	return observeCounting(fn, what, name, src, read, opts, &gaugeSeries, 0,
		func(m metric.Meter, all []metric.ObserveOption, counts *counters, token uint64) (metric.Registration, error) {
			return register(m, all, func() bool { return counts.reported(token) })
		})
}

// gaugeSeries are the registrations in force of each series of the Observe
// functions that report no counter (their counters, none, left unused).
var gaugeSeries seriesCounters

// observeCounting is observe for a source of which some instruments are
// counters: register is also given the counters of the series, n of them,
// kept in by, which src is now read for, and the number of the
// registration, for counters.applyFrom.
func observeCounting(fn, what, name string, src any, read func(), opts []Option, by *seriesCounters, n int,
	register func(metric.Meter, []metric.ObserveOption, *counters, uint64) (metric.Registration, error),
) (metric.Registration, error) {
	c, set, err := prepare(fn, what, name, src, read, opts)
	if err != nil {
		return nil, err
	}
	counts := by.of(c.provider, c.m, set, n)
	token, undo := counts.observingAs(src)
	kept := false
	defer func() {
		// Refused, or the Meter panicked or called runtime.Goexit: src
		// is not read. Left to it, the counters would take the
		// registration in force before for an earlier one, which would
		// report nothing more.
		if !kept {
			undo()
		}
	}()
	reg, err := registered(register(c.meter(), observeOpts(set), counts, token))
	if err != nil {
		return nil, err
	}
	kept = true
	return &countedRegistration{reg, counts, token}, nil
}

// A countedRegistration is the registration of an Observe function that
// reports counters: its end hands the counters back to the registration
// made before it under the name, if one is still in force.
type countedRegistration struct {
	metric.Registration
	counts *counters
	token  uint64
}

func (r *countedRegistration) Unregister() error {
	err := r.Registration.Unregister()
	if err == nil {
		r.counts.ended(r.token) // its callback runs no more
	}
	return err
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
