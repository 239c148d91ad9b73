package ctxsyncprom

import "time"

// A Flight is what AddFlight reads: *ctxsync.Flight[K, V] is one.
type Flight interface {
	Len() int // calls in flight now
}

// A KeyedLock is what AddKeyedLock reads: *ctxsync.KeyedLock[K] is one.
type KeyedLock interface {
	Len() int // keys held or waited for now
}

// A WaitGroup is what AddWaitGroup reads: *ctxsync.WaitGroup is one.
type WaitGroup interface {
	Count() int // the counter now
}

// A Watch is what AddWatch reads: *ctxsync.Watch[T] is one, whatever T.
type Watch interface {
	Version() uint64 // 1 when made, one more at each Store
}

// An AdaptiveLimiter is what AddAdaptiveLimiter reads: *adaptive.Limiter is
// one.
type AdaptiveLimiter interface {
	Limit() int
	InFlight() int
	Waiting() int
	Shed() int64
	Latency() time.Duration
}

// AddFlight adds f under name: each scrape reads its Len, as flight_calls.
//
// AddFlight returns an error wrapping ErrDuplicateName if a Flight was added
// under name already. It panics if f is nil or name is empty.
func (c *Collector) AddFlight(name string, f Flight) error {
	c.mustBeMade()
	checkName("AddFlight", name)
	checkSource("AddFlight", f)
	return c.add("flight", name, &intSource{read: f.Len, s: newSeries(c.d.flightCalls, false, name)})
}

// AddKeyedLock adds k under name: each scrape reads its Len, as
// keyedlock_keys.
//
// AddKeyedLock returns an error wrapping ErrDuplicateName if a KeyedLock was
// added under name already. It panics if k is nil or name is empty.
func (c *Collector) AddKeyedLock(name string, k KeyedLock) error {
	c.mustBeMade()
	checkName("AddKeyedLock", name)
	checkSource("AddKeyedLock", k)
	return c.add("keyedlock", name, &intSource{read: k.Len, s: newSeries(c.d.keyedLockKeys, false, name)})
}

// AddWaitGroup adds wg under name: each scrape reads its Count, as
// waitgroup_tasks (not waitgroup_count: Prometheus keeps the _count suffix
// for histograms and summaries).
//
// AddWaitGroup returns an error wrapping ErrDuplicateName if a WaitGroup was
// added under name already. It panics if wg is nil or name is empty.
func (c *Collector) AddWaitGroup(name string, wg WaitGroup) error {
	c.mustBeMade()
	checkName("AddWaitGroup", name)
	checkSource("AddWaitGroup", wg)
	return c.add("waitgroup", name, &intSource{read: wg.Count, s: newSeries(c.d.waitGroupCount, false, name)})
}

// AddWatch adds w under name: each scrape reads its Version, as the counter
// watch_version_total.
//
// The version is a counter, not a gauge: it only goes up, by one at each
// change, so it counts the changes since the Watch was made (plus one), and
// rate() and increase() over it give how often the value changes, which is
// what Prometheus's conventions keep counters for. A new Watch starts again
// at 1, which Prometheus reads as a counter reset. Past 2^53 a float64 no
// longer holds every version exactly; no Watch changes that often.
//
// AddWatch returns an error wrapping ErrDuplicateName if a Watch was added
// under name already. It panics if w is nil or name is empty.
func (c *Collector) AddWatch(name string, w Watch) error {
	c.mustBeMade()
	checkName("AddWatch", name)
	checkSource("AddWatch", w)
	return c.add("watch", name, &watchSource{w: w, version: newSeries(c.d.watchVersion, true, name)})
}

// AddAdaptiveLimiter adds l under name: each scrape reads its Limit,
// InFlight, Waiting, Shed and Latency, as adaptive_limit,
// adaptive_in_flight, adaptive_waiting, the counter adaptive_shed_total and
// adaptive_latency_seconds.
//
// AddAdaptiveLimiter returns an error wrapping ErrDuplicateName if an
// adaptive limiter was added under name already. It panics if l is nil or
// name is empty.
func (c *Collector) AddAdaptiveLimiter(name string, l AdaptiveLimiter) error {
	c.mustBeMade()
	checkName("AddAdaptiveLimiter", name)
	checkSource("AddAdaptiveLimiter", l)
	return c.add("adaptive limiter", name, &adaptiveSource{
		l:        l,
		limit:    newSeries(c.d.adaptiveLimit, false, name),
		inFlight: newSeries(c.d.adaptiveInFlight, false, name),
		waiting:  newSeries(c.d.adaptiveWaiting, false, name),
		shed:     newSeries(c.d.adaptiveShed, true, name),
		latency:  newSeries(c.d.adaptiveLatency, false, name),
	})
}

// intSource reads one int getter as one gauge: the primitives whose metric
// is a single number.
type intSource struct {
	read func() int
	s    series
}

func (s *intSource) size() int { return 1 }

func (s *intSource) collect(out []sample) []sample {
	return append(out, s.s.at(float64(s.read())))
}

type watchSource struct {
	w       Watch
	version series
}

func (s *watchSource) size() int { return 1 }

func (s *watchSource) collect(out []sample) []sample {
	return append(out, s.version.at(float64(s.w.Version())))
}

type adaptiveSource struct {
	l                                       AdaptiveLimiter
	limit, inFlight, waiting, shed, latency series
}

func (s *adaptiveSource) size() int { return 5 }

func (s *adaptiveSource) collect(out []sample) []sample {
	return append(out,
		s.limit.at(float64(s.l.Limit())),
		s.inFlight.at(float64(s.l.InFlight())),
		s.waiting.at(float64(s.l.Waiting())),
		s.shed.at(float64(s.l.Shed())),
		s.latency.at(s.l.Latency().Seconds()),
	)
}
