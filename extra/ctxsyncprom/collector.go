package ctxsyncprom

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// ErrDuplicateName is returned, wrapped with the kind and the name, by the
// Add methods for a name already added for the same kind of source: two
// sources of one kind under one name would give the same series twice.
var ErrDuplicateName = errors.New("ctxsyncprom: name already added")

// Config configures a Collector. The zero Config means the defaults.
type Config struct {
	// Namespace is the first part of every metric's name, before "_pool_",
	// "_breaker_"... "" means "ctxsync". It must be a valid metric name
	// made of ASCII letters, digits and underscores: no colon, which
	// Prometheus keeps for the names of recording rules (promtool and
	// client_golang's linter flag it in an exporter's metrics).
	Namespace string

	// The upper bounds, in seconds, of the buckets of each histogram, in
	// increasing order. nil means DefaultBuckets().
	AcquireWaitBuckets    []float64 // pool_acquire_wait_seconds
	CreateDurationBuckets []float64 // pool_create_duration_seconds
	CallDurationBuckets   []float64 // breaker_call_duration_seconds
	LimiterWaitBuckets    []float64 // ratelimit_wait_seconds
}

// DefaultBuckets returns the histograms' default bucket bounds, in seconds:
// from 100µs to 10s in 1-2.5-5 steps. A pool's waits and a dependency's calls
// are often well under prometheus.DefBuckets' first bound of 5ms.
func DefaultBuckets() []float64 {
	return []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
}

// A Collector is a prometheus.Collector for the pools, breakers, rate
// limiters, semaphores and queues added to it, each under a name that becomes
// the value of the "name" label of its series. Register it once; add and
// remove sources at any time.
//
// At each scrape it reads the snapshots of its sources (Pool.Stats,
// Breaker.Metrics, Tally.Counts, the gauges' getters): nothing is counted on
// the way of an Acquire or a call. The histograms, which snapshots cannot
// give, are fed by hooks that PoolHooks, BreakerOnCall and TallyOnWait make.
//
// Each Add method reads its source once, so that one that cannot be read (a
// zero pool.Pool, say) panics there, with its own message, rather than at a
// scrape, in the registry's goroutine.
//
// To add labels to every series (the instance of a service, say), register
// the Collector through prometheus.WrapRegistererWith.
//
// Use NewCollector; the zero Collector is not usable, and panics at first use.
// A Collector must not be copied after first use. It is safe for concurrent
// use by multiple goroutines.
type Collector struct {
	d descs

	acquireWait, createDuration, callDuration, limiterWait *prometheus.HistogramVec

	mu   sync.Mutex                // serializes Add and Remove
	srcs atomic.Pointer[sourceSet] // read by Collect without a lock
}

// sourceSet is the sources at one moment. It is never changed once stored:
// Add and Remove store a new one, so that a scrape reads it with no lock.
type sourceSet struct {
	list    []entry // sorted by name, then kind
	samples int     // the most samples the list gives: the size of a scrape's slab
}

// collect reads the snapshot of every source, into one slab of samples.
func (set *sourceSet) collect() []sample {
	slab := make([]sample, 0, set.samples)
	for _, e := range set.list {
		slab = e.src.collect(slab)
	}
	return slab
}

type entry struct {
	kind string // "pool", "breaker"...: a name is unique within its kind
	name string
	src  source
}

// A source gives the samples of one thing added to a Collector.
type source interface {
	// collect appends the samples of the source's current snapshot to out,
	// at most size() of them.
	collect(out []sample) []sample
	size() int
}

var namespaceRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Validate reports what is wrong with c, if anything: a Namespace that is
// not a valid metric name, or a bucket list that is empty, holds NaN or is
// not in strictly increasing order. NewCollector panics with the same
// complaint; a program that reads a Config from outside (a file, flags) can
// call Validate first and report the error instead.
func (c Config) Validate() error {
	if ns := c.Namespace; ns != "" && !namespaceRE.MatchString(ns) {
		return fmt.Errorf("ctxsyncprom: Config.Namespace %q is not a valid metric name (ASCII letters, digits and _, not first a digit; no colon, which is for recording rules)", ns)
	}
	for _, f := range [...]struct {
		field   string
		buckets []float64
	}{
		{"AcquireWaitBuckets", c.AcquireWaitBuckets},
		{"CreateDurationBuckets", c.CreateDurationBuckets},
		{"CallDurationBuckets", c.CallDurationBuckets},
		{"LimiterWaitBuckets", c.LimiterWaitBuckets},
	} {
		if f.buckets == nil {
			continue
		}
		if len(f.buckets) == 0 {
			return fmt.Errorf("ctxsyncprom: Config.%s is empty; nil means DefaultBuckets()", f.field)
		}
		for i, b := range f.buckets {
			// A lone NaN passes the comparison below, which is false
			// for it: look for it on its own.
			if math.IsNaN(b) {
				return fmt.Errorf("ctxsyncprom: Config.%s %v holds NaN", f.field, f.buckets)
			}
			if i > 0 && !(f.buckets[i-1] < b) {
				return fmt.Errorf("ctxsyncprom: Config.%s %v is not in increasing order", f.field, f.buckets)
			}
		}
	}
	return nil
}

// NewCollector returns a Collector with no source.
//
// NewCollector panics if cfg is not valid: see Config.Validate.
func NewCollector(cfg Config) *Collector {
	if err := cfg.Validate(); err != nil {
		panic(err.Error())
	}
	ns := cfg.Namespace
	if ns == "" {
		ns = "ctxsync"
	}
	c := &Collector{d: newDescs(ns)}
	hist := func(buckets []float64, subsystem, name, help string, labels ...string) *prometheus.HistogramVec {
		if buckets == nil {
			buckets = DefaultBuckets()
		}
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: subsystem, Name: name, Help: help,
			Buckets: slices.Clone(buckets), // the caller's slice may change later
		}, append([]string{"name"}, labels...))
		ch := make(chan *prometheus.Desc, 1)
		v.Describe(ch)
		c.d.info[<-ch] = descInfo{prometheus.BuildFQName(ns, subsystem, name), help}
		return v
	}
	c.acquireWait = hist(cfg.AcquireWaitBuckets, "pool", "acquire_wait_seconds",
		"Time Acquires waited for a resource, when they found none idle (from PoolHooks).")
	c.createDuration = hist(cfg.CreateDurationBuckets, "pool", "create_duration_seconds",
		"Time the calls to the pool's New took, failed ones included (from PoolHooks).")
	c.callDuration = hist(cfg.CallDurationBuckets, "breaker", "call_duration_seconds",
		"Time the calls let through by the breaker took, by outcome (from BreakerOnCall).", "outcome")
	c.limiterWait = hist(cfg.LimiterWaitBuckets, "ratelimit", "wait_seconds",
		"Time WaitN calls and Transport requests through the Tally took, by result (from TallyOnWait).", "result")
	c.srcs.Store(&sourceSet{})
	return c
}

func (c *Collector) vecs() [4]*prometheus.HistogramVec {
	return [...]*prometheus.HistogramVec{c.acquireWait, c.createDuration, c.callDuration, c.limiterWait}
}

func (c *Collector) mustBeMade() {
	if c == nil || c.acquireWait == nil {
		panic("ctxsyncprom: use NewCollector; a nil or zero Collector is not usable")
	}
}

// Describe sends the descriptions of every metric the Collector may give,
// whatever its sources: it implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.mustBeMade()
	for _, d := range c.d.all() {
		ch <- d
	}
	for _, v := range c.vecs() {
		v.Describe(ch)
	}
}

// Collect reads the snapshot of every source and sends its samples, then
// the histograms: it implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mustBeMade()
	set := c.srcs.Load()
	if set.samples > 0 {
		// One slab for the whole scrape: the samples' labels were made
		// when their source was added, so a scrape allocates this and
		// what the registry allocates, whatever the number of sources.
		slab := set.collect()
		// The values' messages too, two slabs rather than one allocation
		// per sample in Write: the registry keeps them in what Gather
		// returns.
		counters := 0
		for i := range slab {
			if slab[i].counter {
				counters++
			}
		}
		cs := make([]dto.Counter, counters)
		gs := make([]dto.Gauge, len(slab)-counters)
		for i := range slab {
			s := &slab[i]
			if s.counter {
				s.c, cs = &cs[0], cs[1:]
			} else {
				s.g, gs = &gs[0], gs[1:]
			}
			ch <- s
		}
	}
	for _, v := range c.vecs() {
		v.Collect(ch)
	}
}

// add adds src under kind and name, or returns an error wrapping
// ErrDuplicateName.
//
// It reads src once first, so that a source that cannot be read (a zero
// pool.Pool, say, which panics with "pool: use New") fails here, in the
// caller's goroutine, rather than at every scrape, in the registry's.
func (c *Collector) add(kind, name string, src source) error {
	src.collect(make([]sample, 0, src.size()))
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.srcs.Load()
	i, found := slices.BinarySearchFunc(old.list, entry{kind: kind, name: name}, cmpEntry)
	if found {
		return fmt.Errorf("%w: a %s named %q", ErrDuplicateName, kind, name)
	}
	list := slices.Insert(slices.Clip(old.list), i, entry{kind: kind, name: name, src: src})
	c.srcs.Store(&sourceSet{list: list, samples: old.samples + src.size()})
	return nil
}

func cmpEntry(a, b entry) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	return strings.Compare(a.kind, b.kind)
}

// Remove removes every source added under name, of every kind, and the
// series of its histograms. It reports whether there was any. Hooks made for
// name before go on working, but their observations are no longer exported;
// so do hooks made with no name that were told of an event of name before
// (they looked its series up once). Hooks made after start the histograms
// anew.
func (c *Collector) Remove(name string) bool {
	c.mustBeMade()
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.srcs.Load()
	set := &sourceSet{}
	for _, e := range old.list {
		if e.name != name {
			set.list = append(set.list, e)
			set.samples += e.src.size()
		}
	}
	removed := len(set.list) < len(old.list)
	if removed {
		c.srcs.Store(set)
	}
	for _, v := range c.vecs() {
		if v.DeletePartialMatch(prometheus.Labels{"name": name}) > 0 {
			removed = true
		}
	}
	return removed
}

// checkName panics unless name can be the value of the name label.
func checkName(method, name string) {
	if name == "" {
		panic("ctxsyncprom: " + method + " with an empty name")
	}
	if !utf8.ValidString(name) {
		panic(fmt.Sprintf("ctxsyncprom: %s with a name that is not UTF-8: %q", method, name))
	}
}

// checkSource panics if v is nil, or a nil pointer in an interface.
func checkSource(method string, v any) {
	if v == nil {
		panic("ctxsyncprom: " + method + " with a nil source")
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface, reflect.UnsafePointer:
		if rv.IsNil() {
			panic(fmt.Sprintf("ctxsyncprom: %s with a nil %T", method, v))
		}
	}
}

// A sample is one series' value at one scrape. It implements
// prometheus.Metric with no allocation of its own: its label pairs are made
// once per source (client_golang's own metrics share theirs across scrapes
// too: a dto.Metric's labels are immutable by contract), and its value is
// pointed to where it lies, in the scrape's slab.
type sample struct {
	desc    *prometheus.Desc
	labels  []*dto.LabelPair
	value   float64
	counter bool
	c       *dto.Counter // where Write puts the value: one of them is set
	g       *dto.Gauge
}

func (s *sample) Desc() *prometheus.Desc { return s.desc }

func (s *sample) Write(m *dto.Metric) error {
	m.Label = s.labels
	switch {
	case s.c != nil:
		s.c.Value = &s.value
		m.Counter = s.c
	case s.g != nil:
		s.g.Value = &s.value
		m.Gauge = s.g
	case s.counter: // a sample made outside Collect
		m.Counter = &dto.Counter{Value: &s.value}
	default:
		m.Gauge = &dto.Gauge{Value: &s.value}
	}
	return nil
}

// A series is a desc with the label pairs of one source: a sample without
// its value, made when the source is added.
type series struct {
	desc    *prometheus.Desc
	labels  []*dto.LabelPair
	counter bool
}

func newSeries(d *prometheus.Desc, counter bool, labelValues ...string) series {
	return series{desc: d, labels: prometheus.MakeLabelPairs(d, labelValues), counter: counter}
}

func (s *series) at(v float64) sample {
	if s.counter && !(v >= 0) {
		// A source of the user's own may report a negative count. A
		// counter below zero is no counter (OpenMetrics forbids it, and
		// rate() would read its climb back as growth): it gives 0, a
		// reset to Prometheus, as ctxsyncotel clamps it to 0 too.
		v = 0
	}
	return sample{desc: s.desc, labels: s.labels, value: v, counter: s.counter}
}
