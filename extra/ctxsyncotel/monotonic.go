package ctxsyncotel

import (
	"cmp"
	"container/list"
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

	// orphans are callbacks' registrations with the Meter that report
	// nothing, those of carriers of series merged into this one (see
	// seriesCounters.mergeLocked) whose own registrations had ended: the
	// next Unregister or failed Observe under the series unregisters them.
	orphans []metric.Registration

	// into, once set, are the counters of the series these were merged
	// into: every registration of theirs is that series' (see target).
	into atomic.Pointer[counters]

	// table and key, if table is not nil, are the table that keeps these
	// counters and their key there (see forget). table is set when made;
	// key, guarded by table.mu, changes when a series of the global
	// MeterProvider is found to be one of the provider it delegates to
	// (see seriesCounters.rekeyLocked). ended, guarded by table.mu too, is
	// their element in the table's list of series kept with no
	// registration in force, nil if they are not in it.
	table *seriesCounters
	key   seriesKey
	ended *list.Element
}

// target returns the counters whose series c's are: c's, or those it was
// merged into.
func (c *counters) target() *counters {
	for {
		n := c.into.Load()
		if n == nil {
			return c
		}
		c = n
	}
}

// lock locks and returns the counters whose series c's are (see target).
func (c *counters) lock() *counters {
	for {
		c = c.target()
		c.mu.Lock()
		if c.into.Load() == nil {
			return c
		}
		c.mu.Unlock() // merged meanwhile
	}
}

// tokens numbers the registrations of every series, and joins their joins,
// so that those of two series merged into one (see
// seriesCounters.mergeLocked) keep numbers of their own, and their order.
var tokens, joins atomic.Uint64

// A liveRegistration is a registration of an Observe function in force.
type liveRegistration struct {
	token  uint64
	joined uint64             // numbers its join, in order (see joins)
	src    weak.Pointer[byte] // its source, as join knew it
	read   reader             // reads its source, and reports it
	reg    metric.Registration

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
func (c *counters) start() uint64 { return c.target().seq.Add(1) }

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
	alone := c.target().seq.Add(1) == seq+1
	c = c.lock()
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
// A series is kept while a registration is in force or under way under it.
// Once its last registration ends, one of the Observe functions of gauges,
// which count nothing, goes at once: names observed once each, a million of
// them, are not all kept (see forget). One of ObserveWatch or
// ObserveAdaptiveLimiter is kept, with its counts, so that a source observed
// anew under it (a Watch made anew on a reload, observed once the old one's
// registration ended) carries the counter on; but only so many are: those
// of the series whose last registrations ended most recently, as many as
// the most series that were in force at once, and at least
// endedKeptMin. The one that ended longest ago goes when one more would
// be kept, and its name, observed again, counts from its source's own
// counts, as a name never seen does.
//
// The provider is known by a weak pointer, which keeps it alive no longer
// than the program does, and the entries of providers collected go when a
// new series finds the table grown by half since they were last looked for
// (see sweepAt). A provider that is not a pointer cannot be known: its
// series get new counters at each Observe, which carry on nothing
// (noop.MeterProvider is such a value, and reports nothing anyway).
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

	// ended are the counters in m of the series kept with no registration
	// in force or under way, the one that ended first at the front, and
	// peak the most series of m that were in force at once (len(m) -
	// ended.Len()): no more than max(peak, endedKeptMin) are kept so.
	// Guarded by mu.
	ended list.List
	peak  int

	// rekeyed tells that the series of the global MeterProvider have been
	// made those of the provider it delegates to (see rekeyLocked).
	// Guarded by mu.
	rekeyed bool

	// transient tells that the table keeps a series only while a
	// registration is in force or under way under it (see
	// counters.forget): that of the Observe functions of gauges, which
	// have no count to carry on. Set before the table is used.
	transient bool
}

// seriesSweepMin is the least sweepAt: a table of a few series is not worth
// a sweep.
const seriesSweepMin = 16

// endedKeptMin is the most series a table of counts keeps with no
// registration in force (see seriesCounters), unless more were in force at
// once: their counts are some hundreds of bytes each.
const endedKeptMin = 1024

// endedKept is endedKeptMin, but for the tests that drop ended series
// sooner.
var endedKept = endedKeptMin

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

// delegate is the provider globalProvider delegates to, as a key of series,
// once the package has found it (see learnDelegate): the zero weak pointer
// until then.
var delegate atomic.Pointer[weak.Pointer[byte]]

// delegateID returns delegate, or the zero weak pointer.
func delegateID() weak.Pointer[byte] {
	if d := delegate.Load(); d != nil {
		return *d
	}
	return weak.Pointer[byte]{}
}

// learnDelegate looks for the provider that globalProvider delegates to:
// the one set by the first otel.SetMeterProvider of the process, whose
// series the global provider's instruments report to. The delegating
// provider, once it delegates, gives the Meter of the provider set (the
// SDK's is one per scope); until then it gives one of its own. So the
// provider that is the global one now is the delegate if the two give the
// same Meter of the package's instruments. Only the global one now, and
// the delegating one, are asked for a Meter: no other provider is, on
// behalf of another. A provider found not to be the delegate (the global
// one set a second time, or a provider whose Meters are new at each call)
// is not asked again. Once found, the series of the global provider become
// those of the delegate, in every table (see rekeyLocked).
//
// Called at each Observe, and at each collection by the callbacks, so that
// the series are one from the first collection after otel.SetMeterProvider
// on, whichever callback runs first: each reports through the series
// merged. It costs a collection an atomic load, and, while the global
// provider is the delegating one, a look at it.
//
// An Observe (atObserve) that finds the providers being asked, by this
// goroutine or another, does not ask them again, and leaves the merge to
// the one asking: the global provider holds a lock of its own while it
// asks the provider it delegates to for its Meter, and that Meter, code of
// the user's, may itself call an Observe function, which would ask the
// global provider again and wait for that lock for good. A series such an
// Observe makes under the global provider is merged all the same, when the
// one asking rekeys the tables. A callback does ask: it must not report a
// series not yet merged.
func learnDelegate(atObserve bool) {
	if learned.Load() || !globalKeyed.Load() {
		return
	}
	if atObserve && asking.Load() > 0 {
		return
	}
	cur := otel.GetMeterProvider()
	if samePointer(cur, globalProvider) {
		return // not set yet: nothing is delegated to
	}
	id := sourceOf(cur)
	if t := triedDelegate.Load(); id == (weak.Pointer[byte]{}) || t != nil && *t == id {
		return
	}
	// Asked with no lock held: a provider's Meter is code of the user's.
	// One that panics, or calls runtime.Goexit, is not the delegate, and is
	// not asked again: the panic would otherwise reach the collection of
	// another provider, and the Goexit end its goroutine, each time.
	asking.Add(1)
	same := false
	func() {
		defer func() {
			asking.Add(-1)
			if !same {
				tried := id // on the heap here alone, not at each look
				triedDelegate.Store(&tried)
			}
		}()
		same = sameMeter(globalProvider, cur)
	}()
	if !same {
		return
	}
	// A callback that finds the delegate being learned waits until every
	// table is rekeyed, lest it report a series not yet merged beside the
	// one it is merged into.
	learnMu.Lock()
	defer learnMu.Unlock()
	if learned.Load() {
		return
	}
	found := id
	delegate.Store(&found)
	for _, s := range allSeriesCounters() {
		s.mu.Lock()
		s.rekeyLocked()
		s.mu.Unlock()
	}
	learned.Store(true)
}

// learnMu serializes the learning of the delegate, and learned tells that
// it is over: delegate is set, and every table made so far is rekeyed (one
// made later is made rekeyed).
var (
	learnMu sync.Mutex
	learned atomic.Bool
)

// asking counts the learnDelegate calls asking the providers for their
// Meters (see sameMeter) now.
var asking atomic.Int32

// triedDelegate is the last provider learnDelegate found not to be the
// delegate, if any.
var triedDelegate atomic.Pointer[weak.Pointer[byte]]

// globalKeyed tells that a series was once keyed by globalProvider itself,
// which is then worth merging with the delegate's (see learnDelegate):
// until one is, no callback looks at the global provider.
var globalKeyed atomic.Bool

// sameMeter reports whether a and b give the same Meter of the package's
// instruments; false if either panics.
func sameMeter(a, b metric.MeterProvider) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return samePointer(scopeMeter(a), scopeMeter(b))
}

// allSeriesCounters returns every table of series made so far.
func allSeriesCounters() []*seriesCounters {
	all := []*seriesCounters{&watchCounters, &adaptiveCounters}
	gaugeSeries.mu.Lock()
	defer gaugeSeries.mu.Unlock()
	for _, s := range gaugeSeries.m {
		all = append(all, s)
	}
	return all
}

// keyOf returns the key of the series of the provider known by id and of
// set: that of the provider delegated to for the global one, once it is
// known (see learnDelegate). s.mu must be held, and s rekeyed (see
// rekeyLocked) if the delegate is known.
func keyOf(id weak.Pointer[byte], set attribute.Distinct) seriesKey {
	if d := delegateID(); d != (weak.Pointer[byte]{}) && id == sourceOf(globalProvider) {
		id = d
	}
	return seriesKey{id, set}
}

// of returns the counters, n of them, of the series of provider and set.
//
// The global provider, taken when no WithMeterProvider is given, is two
// providers in turn: the delegating one before the first
// otel.SetMeterProvider, the provider set then after it. Instruments of
// either report to the same series of the provider set, so a series
// observed through one, and then through the other, must be one: its
// registrations reported by one callback, its counts carried on. The
// series are keyed by the provider set, once the package finds that the
// global provider delegates to it (see learnDelegate); until then, those of
// the delegating one are its own, and are made the set provider's then,
// merged with theirs of the same attributes, if any (see rekeyLocked).
func (s *seriesCounters) of(provider metric.MeterProvider, set attribute.Set, n int) *counters {
	k, _ := s.lookup(provider, set, n, false)
	return k
}

// arrive returns the counters of the series of provider and set, as of
// does, and begins a registration under them (see counters.arrive), in one
// step: a table that drops a series once no registration is left (see
// forget) cannot drop it between the two, which would leave this
// registration under counters no longer the series', beside the ones a
// later Observe makes: two callbacks would report the series.
func (s *seriesCounters) arrive(provider metric.MeterProvider, set attribute.Set, n int) (*counters, uint64) {
	return s.lookup(provider, set, n, true)
}

// lookup is of, and arrive if begin.
func (s *seriesCounters) lookup(provider metric.MeterProvider, set attribute.Set, n int, begin bool) (_ *counters, token uint64) {
	learnDelegate(true)
	id := sourceOf(provider)
	if id == (weak.Pointer[byte]{}) {
		k := &counters{last: make([]int64, n), base: make([]int64, n)}
		if begin {
			token = k.arrive()
		}
		return k, token
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rekeyLocked()
	key := keyOf(id, set.Equivalent())
	k := s.entryLocked(key, n)
	if begin {
		s.busyLocked(k)
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
		for key, k := range s.m {
			if key.provider.Value() == nil {
				s.removeLocked(k)
			}
		}
		s.sweepAt = max(len(s.m)+len(s.m)/2, seriesSweepMin)
	}
	k := &counters{last: make([]int64, n), base: make([]int64, n), table: s, key: key}
	s.m[key] = k
	if !globalKeyed.Load() && key.provider == sourceOf(globalProvider) {
		globalKeyed.Store(true)
	}
	return k
}

// removeLocked takes k, an entry of s, out of s. s.mu must be held.
func (s *seriesCounters) removeLocked(k *counters) {
	delete(s.m, k.key)
	if k.ended != nil {
		s.ended.Remove(k.ended)
		k.ended = nil
	}
}

// busyLocked takes k, an entry of s that a registration begins under, out of
// the series kept with none (see seriesCounters), and counts it in force.
// s.mu must be held.
func (s *seriesCounters) busyLocked(k *counters) {
	if k.ended != nil {
		s.ended.Remove(k.ended)
		k.ended = nil
	}
	s.peak = max(s.peak, len(s.m)-s.ended.Len())
}

// drop takes k, counters of s, out of s if they are still its entry and
// idle (see counters.idleLocked), or, for a table of counts, keeps them
// among the series with no registration in force, the one that ended
// longest ago going if there are too many (see seriesCounters).
func (s *seriesCounters) drop(k *counters) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k.mu.Lock()
	idle := s.m[k.key] == k && k.into.Load() == nil && k.idleLocked()
	k.mu.Unlock()
	if !idle || k.ended != nil {
		return
	}
	if s.transient {
		s.removeLocked(k)
		return
	}
	k.ended = s.ended.PushBack(k)
	for s.ended.Len() > max(s.peak, endedKept) {
		s.removeLocked(s.ended.Front().Value.(*counters))
	}
}

// rekeyLocked makes the series of the global provider those of the provider
// it delegates to, once that is known (see learnDelegate), and once: a
// series of the global provider made before then becomes the delegate's
// series of its attributes, and if there is one already, the two are
// merged (see mergeLocked). s.mu must be held.
func (s *seriesCounters) rekeyLocked() {
	d := delegateID()
	if s.rekeyed || d == (weak.Pointer[byte]{}) {
		return
	}
	s.rekeyed = true
	s.moveLocked(sourceOf(globalProvider), d)
}

// moveLocked makes the series of the provider known by from those of the
// provider known by to, merging two of the same attributes (see
// mergeLocked). s.mu must be held.
func (s *seriesCounters) moveLocked(from, to weak.Pointer[byte]) {
	var moved []*counters
	for key, k := range s.m {
		if key.provider == from {
			moved = append(moved, k)
		}
	}
	for _, k := range moved {
		delete(s.m, k.key)
		k.key.provider = to
		if into := s.m[k.key]; into != nil {
			s.mergeLocked(k, into)
		} else {
			s.m[k.key] = k
		}
	}
}

// mergeLocked merges g, counters of s taken out of its map, into p, the
// entry of s of the same key: both report to one series of the SDK, which
// adds up what their callbacks report. p's series then holds the
// registrations of both, reported by one callback, the newest's source
// alone; g's registrations, and its Observe calls under way, forward to p
// (see target).
//
// The counts of g are added to p's base: the counter carries on from the
// sum the SDK showed, never falling. The source counted is that of the
// newest registration in force of the two, as if the others had been taken
// over by it. p's carrier, if any, carries on; else g's becomes p's. The
// callback of g's carrier, if p's carries on, reports nothing more: it goes
// with its own registration, or, if that ended, with the next Unregister
// under the series (see orphans). s.mu must be held.
func (s *seriesCounters) mergeLocked(g, p *counters) {
	if g.ended != nil {
		s.ended.Remove(g.ended)
		g.ended = nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := g.liveOf(g.cur); i >= 0 {
		g.live[i].last = slices.Clone(g.last)
	}
	if i := p.liveOf(p.cur); i >= 0 {
		p.live[i].last = slices.Clone(p.last)
	}
	for i := range p.base {
		p.base[i] = addCount(p.base[i], addCount(g.base[i], g.last[i]))
	}
	p.live = append(p.live, g.live...)
	slices.SortStableFunc(p.live, func(a, b liveRegistration) int { return cmp.Compare(a.joined, b.joined) })
	if len(p.live) > 0 {
		p.resumeNewestLocked()
	}
	p.pending += g.pending
	p.orphans = append(p.orphans, g.orphans...)
	// A read begun under g and applied under p (see applyFrom) was
	// numbered by g, and must not pass for one that overlapped no other
	// by p's numbers: p's go on past every number g gave, and g's, given
	// by a read that found g before into is set, from far beyond p's.
	gs := g.seq.Swap(1 << 62)
	for {
		ps := p.seq.Load()
		if p.seq.CompareAndSwap(ps, max(ps, gs)+1) {
			break
		}
	}
	gHas := g.carrier != 0 && !g.retiring
	pHas := p.carrier != 0 && !p.retiring
	switch {
	case gHas && (!pHas || p.carrierReg == nil && g.carrierReg != nil):
		// p has no carrier, or one whose Observe is under way, with no
		// registration in force (see the invariants): g's carries. p's,
		// when it joins, joins as one more registration.
		p.carrier, p.carrierReg, p.retiring = g.carrier, g.carrierReg, false
	case gHas && g.carrierReg != nil && g.liveOf(g.carrier) < 0:
		p.orphans = append(p.orphans, g.carrierReg)
	}
	// A retire of g's carrier under way goes on: it unregisters g's
	// callback, and then finds p's carrier none of its own (see retire).
	g.live, g.pending, g.orphans, g.carrier, g.carrierReg = nil, 0, nil, 0, nil
	g.into.Store(p)
	if p.ended != nil && !p.idleLocked() {
		s.ended.Remove(p.ended)
		p.ended = nil
	}
}
