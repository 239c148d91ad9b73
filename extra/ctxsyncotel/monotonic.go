package ctxsyncotel

import (
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// counters keep the counters that Observe reads from a source's snapshot
// monotonic, as an OpenTelemetry counter must be, for one name of a
// BreakerMetrics, PoolMetrics or LimiterMetrics, or one series of an
// Observe function, whose registrations they also keep (see series.go;
// those of gauges alone keep no count). What they read may fall:
// Breaker.Reset zeroes a breaker's Total, and a new pool, breaker or Tally
// observed under the name once the first registration ends (one made anew
// on a reload of the configuration) starts from its own counts. Reported
// as read, the counter would fall; a back end tells a restart of a
// cumulative counter by a new start time, which an observable instrument
// cannot give, and a delta reader would get a negative delta. So each count
// carries on from where it was: a new source's counts add to those
// counted, and a fall of any count is taken for a reset of them all (a
// Breaker.Reset zeroes every count at once), what was read before it being
// added to a base. The counts a source made between the last collection
// and its reset are lost to the counter; so are those it made after the
// reset, up to those read before it, if by the next read no count has
// fallen: nothing then tells of the reset. None is counted twice, but for a
// source observed again after another (A, then B, then A): only the source
// read last is known, so A's counts are added once more. Knowing every
// source seen would keep an entry for each pool made on each reload.
type counters struct {
	seq atomic.Uint64 // numbers the beginning and the end of each read of the source

	mu      sync.Mutex
	src     weak.Pointer[byte] // the source read last; weak, to keep none alive (see observing)
	gen     uint64             // numbers the calls of observing, and the registrations of a series
	cur     uint64             // the number of the registration counted (see applyFrom)
	applied uint64             // the seq of the read last applied
	last    []int64            // the counts read last
	base    []int64            // counted before the last reset, and from earlier sources

	// The rest serves the Observe functions alone, whose counters are those
	// of a series (see series.go).

	// live are the registrations in force under the series, oldest first:
	// the newest is read, and counted; when it ends, the newest left is
	// again (see end).
	live []liveRegistration

	// pending counts the Observe calls under way, between arrive and join
	// or abandon.
	pending int

	// carrier is the number of the registration whose callback reports the
	// series, 0 if none; carrierReg is that callback's registration with
	// the Meter, nil until its Observe has it (see arrive), and retiring
	// tells that it is being unregistered, the last registration having
	// ended (see settleLocked).
	carrier    uint64
	carrierReg metric.Registration
	retiring   bool

	// table and key, if table is not nil, are the table that keeps these
	// counters and their key there, for a table that drops them once no
	// registration is left (see forget). Set when made.
	table *seriesCounters
	key   seriesKey
}

// A liveRegistration is a registration of an Observe function in force.
type liveRegistration struct {
	token uint64
	src   weak.Pointer[byte] // its source, as join knew it
	read  reader             // reads its source, and reports it
	reg   metric.Registration

	// last are the counts read from src when a registration made later
	// took over, nil while it is counted: what its source has counted.
	last []int64
}

// maxCount is the most a counter read from a source reports: counts
// saturate there. The SDK adds an int64 sum up through a float64, and a
// float64 of 2^63-512 or more rounds to 2^63, which wraps to a negative
// int64: 2^63-1024 is the largest float64 below 2^63. A count of a source
// summed with those of the sources before it would wrap past
// math.MaxInt64 itself.
const maxCount = 1<<63 - 1024

// addCount returns a+b, for counts in [0, maxCount], saturated at maxCount.
func addCount(a, b int64) int64 {
	if a > maxCount-b {
		return maxCount
	}
	return a + b
}

// countersByName are the counters of each name a metrics type observed.
type countersByName struct {
	mu sync.Mutex
	m  map[string]*counters // guarded by mu
}

// of returns the counters of name, n of them, made at its first Observe.
func (c *countersByName) of(name string, n int) *counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*counters{}
	}
	k := c.m[name]
	if k == nil {
		k = &counters{last: make([]int64, n), base: make([]int64, n)}
		c.m[name] = k
	}
	return k
}

// observing tells c that src is now read under its name, for the Observe
// of a metrics type (PoolMetrics, BreakerMetrics, LimiterMetrics), which
// refuses a second registration while the first is in force. A source
// other than the one read before adds its counts to those counted: its own
// start from 0, and are no reset of the other's. The same source observed
// again, after Unregister, carries on. A source is known by a weak pointer,
// which keeps nothing alive; its address alone would not do: once the
// source is collected, a new one (a pool made anew on a reload) may be
// allocated at the same address, and would be taken for it, its counts
// lost, where a weak pointer made of it is equal to none made before. One
// that is not a pointer is taken for the same source, lest it be counted
// twice (a new one then carries on from the counts read last, as after a
// reset).
//
// It returns undo, which puts c back as it was, for an Observe whose
// registration then fails: src is not read after all, and the source read
// before, observed again, must carry on, not be added to itself. Called
// before the registration, not after, so that no collection reads src
// before c knows it.
func (c *counters) observing(src any) (undo func()) {
	id := sourceOf(src)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	token, cur0 := c.gen, c.cur
	c.cur = token
	var last0, base0 []int64
	src0, switched := c.src, id != (weak.Pointer[byte]{}) && id != c.src
	if switched {
		last0, base0 = slices.Clone(c.last), slices.Clone(c.base)
		c.switchTo(id)
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.cur != token {
			return // observed again meanwhile: the counters are that one's
		}
		c.cur = cur0
		if switched {
			c.src = src0
			copy(c.last, last0)
			copy(c.base, base0)
		}
	}
}

// switchTo makes id the source read: the counts of the one before go to the
// base, and id's count from 0. c.mu must be held.
func (c *counters) switchTo(id weak.Pointer[byte]) {
	c.src = id
	for i := range c.last {
		c.base[i] = addCount(c.base[i], c.last[i])
		c.last[i] = 0
	}
}

// liveOf returns the index in c.live of the registration numbered token, or
// -1. c.mu must be held.
func (c *counters) liveOf(token uint64) int {
	return slices.IndexFunc(c.live, func(r liveRegistration) bool { return r.token == token })
}

// resumeNewestLocked makes the newest registration in force, of which there
// is one, the one counted, from the counts its source had when it was taken
// over (see end). c.mu must be held.
func (c *counters) resumeNewestLocked() {
	back := &c.live[len(c.live)-1]
	c.cur = back.token
	if back.last != nil && back.src != c.src {
		// The base is at least what the source counted when it was taken
		// over (the switch added it), unless it saturated: then the sum
		// stays saturated.
		for i := range c.last {
			c.base[i] = addCount(c.base[i], c.last[i]) - back.last[i]
			c.last[i] = back.last[i]
		}
		c.src = back.src
	}
	back.last = nil
}

// sourceOf returns the weak pointer that src is known by, or the zero one if
// src is not a pointer.
func sourceOf(src any) weak.Pointer[byte] {
	if v := reflect.ValueOf(src); v.Kind() == reflect.Pointer && !v.IsNil() {
		return weak.Make((*byte)(v.UnsafePointer()))
	}
	return weak.Pointer[byte]{}
}

// samePointer reports whether a and b are the same pointer; false for
// values that are not pointers, which may not even be comparable.
func samePointer(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && vb.Kind() == reflect.Pointer &&
		va.Type() == vb.Type() && va.UnsafePointer() == vb.UnsafePointer()
}

// start numbers the beginning of a read of the source: take it before the
// read, and give it to apply.
func (c *counters) start() uint64 { return c.seq.Add(1) }

// apply turns v, the counts that the read begun at seq gave, into the
// counters' values, in place.
//
// Only a read that overlapped no other moves the counters. Two collections
// (of two readers) may read the source at once, and neither the numbers
// they took before their reads nor those after tell which read first: a
// collection may stall between its number and its read, or between its
// read and here. Applied in the wrong order, an older read's smaller counts
// pass for a reset, and the counts read before them are added to the base
// and counted again. A read whose end (numbered here, after the read) is
// the next number after its beginning had the source to itself: no other
// began or ended meanwhile, so it read after every read applied with a
// smaller number and before every one with a larger. A read older than one
// applied already is not applied either. Those not applied report the
// values as they are: a collection that met another lags by one, and one
// reader alone (the SDK runs a reader's callbacks one collection at a
// time) never does.
func (c *counters) apply(seq uint64, v []int64) {
	c.applyFrom(0, seq, v)
}

// applyFrom is apply for a read made by the registration numbered token of
// a series (see join), and reports whether it was that of the registration
// counted. A read of another, which the registration made after it took
// over while it read (see counters.report), is not applied: its counts are
// no longer the series', and counted in turn with the new source's, each
// would take the other's smaller counts for a reset, whether or not either
// is a pointer. It leaves in v the counts as they stand, which the series
// reports all the same: a series in force is reported at each collection,
// once. A token of 0 is always counted.
func (c *counters) applyFrom(token uint64, seq uint64, v []int64) bool {
	alone := c.seq.Add(1) == seq+1
	c.mu.Lock()
	defer c.mu.Unlock()
	counted := token == 0 || token == c.cur
	if counted && alone && seq > c.applied {
		c.applied = seq
		// A count is kept to [0, maxCount]: a negative one, from a
		// source of the user's own, would make the counter negative, or
		// fall with the next.
		for i, n := range v {
			v[i] = min(max(n, 0), maxCount)
		}
		// A fall of one count is a reset of all: the others, read at or
		// above what they were, count from 0 again too, and what they
		// counted before it would otherwise be lost.
		reset := false
		for i, n := range v {
			reset = reset || n < c.last[i]
		}
		for i, n := range v {
			if reset {
				c.base[i] = addCount(c.base[i], c.last[i])
			}
			c.last[i] = n
		}
	}
	for i := range v {
		v[i] = addCount(c.base[i], c.last[i])
	}
	return counted
}

// seriesCounters are the counters of an Observe function, which has no value
// of its own to keep them in between registrations (as a PoolMetrics has):
// one set for each series, a MeterProvider's and an attribute set's, since
// the SDK keeps a series of each, and a source observed anew under one must
// carry on from what its last source counted.
//
// An entry of counters is kept while its provider lives, whatever the
// registrations: a name observed anew after a while must still carry on.
// One of the Observe functions of gauges, which count nothing, goes once
// its last registration ends: names observed once each, a million of them,
// are not all kept (see forget). The provider is known by a weak pointer,
// which keeps it alive no longer than the program does, and the entries of
// providers collected go when a new series finds the table grown by half
// since they were last looked for (see sweepAt). A provider that is not a
// pointer cannot be known: its series get new counters at each Observe,
// which carry on nothing (noop.MeterProvider is such a value, and reports
// nothing anyway).
type seriesCounters struct {
	mu sync.Mutex
	m  map[seriesKey]*counters // guarded by mu

	// sweepAt is the size of m at which a new series first sweeps it for
	// the entries of providers collected: half as large again as what the
	// last sweep left, so that a sweep's cost, a look at each entry, is
	// paid for by the series added since, and observing n names costs n
	// looks, not n²/2. The entries of providers collected meanwhile stay
	// until then: the table holds at most one and a half times the most
	// series of providers alive at once, and a few. Guarded by mu.
	sweepAt int

	// transient tells that the table keeps a series only while a
	// registration is in force or under way under it (see
	// counters.forget): that of the Observe functions of gauges, which
	// have no count to carry on. Set before the table is used.
	transient bool
}

// seriesSweepMin is the least sweepAt: a table of a few series is not worth
// a sweep.
const seriesSweepMin = 16

type seriesKey struct {
	provider weak.Pointer[byte]
	set      attribute.Distinct
}

// The counters of the Observe functions that report counters.
var watchCounters, adaptiveCounters seriesCounters

// globalProvider is the global MeterProvider as the package found it: before
// the first otel.SetMeterProvider of the process, the one that delegates to
// the provider set then.
var globalProvider = otel.GetMeterProvider()

// of returns the counters, n of them, of the series of provider and set; m
// is provider's Meter of the package's instruments.
//
// The global provider, taken when no WithMeterProvider is given, is two
// providers in turn: the delegating one before the first
// otel.SetMeterProvider, the provider set then after it. Instruments of
// either report to the same series of the provider set, so a source observed
// through one and then one through the other must share counters, or the
// counter would fall from the first's count to the second's. They are known
// for one by the Meter: the delegating provider, once set, gives the set
// provider's own (the SDK's is one per scope); until then it gives one of
// its own, and nothing is shared. Only a provider that is the global one
// now is looked at so: the delegating one is not asked for a Meter (nor,
// through it, the provider it delegates to) on behalf of another.
func (s *seriesCounters) of(provider metric.MeterProvider, m metric.Meter, set attribute.Set, n int) *counters {
	k, _ := s.lookup(provider, m, set, n, false)
	return k
}

// arrive returns the counters of the series of provider and set, as of
// does, and begins a registration under them (see counters.arrive), in one
// step: a table that drops a series once no registration is left (see
// forget) cannot drop it between the two, which would leave this
// registration under counters no longer the series', beside the ones a
// later Observe makes: two callbacks would report the series.
func (s *seriesCounters) arrive(provider metric.MeterProvider, m metric.Meter, set attribute.Set, n int) (*counters, uint64) {
	return s.lookup(provider, m, set, n, true)
}

// lookup is of, and arrive if begin.
func (s *seriesCounters) lookup(provider metric.MeterProvider, m metric.Meter, set attribute.Set, n int, begin bool) (_ *counters, token uint64) {
	if !samePointer(provider, globalProvider) && samePointer(provider, otel.GetMeterProvider()) &&
		samePointer(scopeMeter(globalProvider), m) {
		provider = globalProvider
	}
	id := sourceOf(provider)
	if id == (weak.Pointer[byte]{}) {
		k := &counters{last: make([]int64, n), base: make([]int64, n)}
		if begin {
			token = k.arrive()
		}
		return k, token
	}
	key := seriesKey{id, set.Equivalent()}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.entryLocked(key, n)
	if begin {
		token = k.arrive()
	}
	return k, token
}

// entryLocked returns the counters of key, n of them, made if there are
// none. s.mu must be held.
func (s *seriesCounters) entryLocked(key seriesKey, n int) *counters {
	if k := s.m[key]; k != nil {
		return k
	}
	if s.m == nil {
		s.m = map[seriesKey]*counters{}
	}
	if len(s.m) >= s.sweepAt {
		for key := range s.m {
			if key.provider.Value() == nil {
				delete(s.m, key)
			}
		}
		s.sweepAt = max(len(s.m)+len(s.m)/2, seriesSweepMin)
	}
	k := &counters{last: make([]int64, n), base: make([]int64, n)}
	if s.transient {
		k.table, k.key = s, key
	}
	s.m[key] = k
	return k
}

// drop takes k, the counters of key, out of s if they are still its entry
// and idle (see counters.idleLocked).
func (s *seriesCounters) drop(key seriesKey, k *counters) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.m[key] == k && k.idleLocked() {
		delete(s.m, key)
	}
}
