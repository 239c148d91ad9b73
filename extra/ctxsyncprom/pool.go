package ctxsyncprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctxsync/ctxsync/pool"
)

// A Pool is what AddPool reads: every *pool.Pool[T] is one.
type Pool interface {
	Stats() pool.Stats
}

// AddPool adds p under name: each scrape reads p.Stats(). An empty name
// means the pool's own, Config.Name (p.Stats().Name), so that the name is
// written once; a name given wins over the pool's own. For the histograms
// of its waits and of its calls to New, give the pool PoolHooks("") too (or
// PoolHooks(name), if name is given here).
//
// AddPool returns an error wrapping ErrDuplicateName if a pool was added
// under name already. It panics if p is nil, or if name and the pool's own
// name are both empty.
func (c *Collector) AddPool(name string, p Pool) error {
	c.mustBeMade()
	checkSource("AddPool", p)
	if name == "" {
		if name = p.Stats().Name; name == "" {
			panic("ctxsyncprom: AddPool with an empty name, of a pool with no Config.Name: name the pool, or give AddPool a name")
		}
	}
	checkName("AddPool", name)
	d := &c.d
	s := &poolSource{p: p}
	// In the order of their label values, as the registry sorts them.
	for i, state := range [...]string{"closing", "constructing", "idle", "in_use"} {
		s.resources[i] = newSeries(d.poolResources, false, name, state)
	}
	for i, reason := range [...]string{"destroy", "health", "idle", "lifetime", "pool"} {
		s.closed[i] = newSeries(d.poolClosed, true, name, reason)
	}
	s.max = newSeries(d.poolMax, false, name)
	s.waiters = newSeries(d.poolWaiters, false, name)
	s.acquires = newSeries(d.poolAcquires, true, name)
	s.empty = newSeries(d.poolEmptyAcquires, true, name)
	s.canceled = newSeries(d.poolCanceled, true, name)
	s.waits = newSeries(d.poolWaits, true, name)
	s.waitDuration = newSeries(d.poolWaitDuration, true, name)
	s.created = newSeries(d.poolCreated, true, name)
	s.createFailures = newSeries(d.poolCreateFailures, true, name)
	s.closeErrors = newSeries(d.poolCloseErrors, true, name)
	return c.add("pool", name, s)
}

type poolSource struct {
	p         Pool
	resources [4]series
	closed    [5]series

	max, waiters, acquires, empty, canceled, waits, waitDuration series
	created, createFailures, closeErrors                         series
}

const poolSamples = 4 + 5 + 10

func (s *poolSource) size() int { return poolSamples }

func (s *poolSource) collect(out []sample) []sample {
	st := s.p.Stats()
	return append(out,
		s.resources[0].at(float64(st.Closing)),
		s.resources[1].at(float64(st.Constructing)),
		s.resources[2].at(float64(st.Idle)),
		s.resources[3].at(float64(st.InUse)),
		s.max.at(float64(st.Max)),
		s.waiters.at(float64(st.Waiting)),
		s.acquires.at(float64(st.AcquireCount)),
		s.empty.at(float64(st.EmptyAcquires)),
		s.canceled.at(float64(st.CanceledAcquires)),
		s.waits.at(float64(st.WaitCount)),
		s.waitDuration.at(st.WaitDuration.Seconds()),
		s.created.at(float64(st.Created)),
		s.createFailures.at(float64(st.CreateFailures)),
		s.closed[0].at(float64(st.ClosedDestroy)),
		s.closed[1].at(float64(st.ClosedHealth)),
		s.closed[2].at(float64(st.ClosedIdle)),
		s.closed[3].at(float64(st.ClosedLifetime)),
		s.closed[4].at(float64(st.ClosedPool)),
		s.closeErrors.at(float64(st.CloseErrors)),
	)
}

// PoolHooks returns the hooks that feed the histograms of the pool named
// name: pool_acquire_wait_seconds, of the Acquires that found no idle
// resource and waited, and pool_create_duration_seconds, of the calls to
// New. Set them as the pool's Config.Hooks (with JoinPoolHooks beside hooks
// of your own), and add the pool with AddPool for the rest of its metrics.
//
// An empty name means the pool's own: each observation is labelled with
// the Name of its event, the pool's Config.Name, so that hooks made before
// the pool need not be told it again, and one set of hooks may serve
// several pools. A name given wins over the events' own. Calls with the
// same name share the histograms.
//
// The hooks observe a histogram whose series was looked up once: here for
// a name given, at the first event of each name otherwise. An Acquire that
// did not wait costs them a function call, and no clock read.
//
// PoolHooks panics if name is not UTF-8. The hooks of PoolHooks("") panic,
// at the first event of the pool, if the pool has no Config.Name (or one
// that is not UTF-8), with a message that says so: in the goroutine of the
// event, which for OnCreate is the pool's own, where a panic ends the
// program (see pool.Pool). Name the pool, or give PoolHooks a name.
func (c *Collector) PoolHooks(name string) pool.Hooks {
	c.mustBeMade()
	if name == "" {
		return c.ownPoolHooks()
	}
	checkName("PoolHooks", name)
	wait := c.acquireWait.WithLabelValues(name)
	create := c.createDuration.WithLabelValues(name)
	return pool.Hooks{
		OnAcquire: func(e pool.AcquireEvent) {
			if e.Waited {
				wait.Observe(e.Wait.Seconds())
			}
		},
		OnCreate: func(e pool.CreateEvent) {
			if !e.Refused { // the breaker's refusals took no call to New
				create.Observe(e.Duration.Seconds())
			}
		},
	}
}

// poolSeries are the histogram series of one pool's name.
type poolSeries struct{ wait, create prometheus.Observer }

// ownPoolHooks is PoolHooks(""): the same hooks, whose series are those of
// each event's own name.
func (c *Collector) ownPoolHooks() pool.Hooks {
	series := &byName[*poolSeries]{make: func(name string) *poolSeries {
		if name == "" {
			panic(`ctxsyncprom: PoolHooks("") told of a pool with no Config.Name: name the pool, or give PoolHooks a name`)
		}
		checkName(`PoolHooks("") told of a pool`, name)
		return &poolSeries{c.acquireWait.WithLabelValues(name), c.createDuration.WithLabelValues(name)}
	}}
	// series.get by hand: the generic call is not inlined, and this is
	// every event's path.
	of := func(name string) *poolSeries {
		if f := series.first.Load(); f != nil && f.name == name {
			return f.v
		}
		return series.slow(name)
	}
	return pool.Hooks{
		OnAcquire: func(e pool.AcquireEvent) {
			// Looked up even for an Acquire that did not wait, so that
			// a pool with no name shows at its first event, whatever
			// it is.
			s := of(e.Name)
			if e.Waited {
				s.wait.Observe(e.Wait.Seconds())
			}
		},
		OnCreate: func(e pool.CreateEvent) {
			s := of(e.Name)
			if !e.Refused {
				s.create.Observe(e.Duration.Seconds())
			}
		},
	}
}

// JoinPoolHooks returns hooks that call, for each event, the hooks of each
// of hooks that are set, in the order given. An event none of them has a hook
// for has none in the result, so that it costs the pool nothing. If a hook
// panics or calls runtime.Goexit, those after it are called all the same,
// once, and the panic then goes on (as the last one, if another hook
// panics too). A later hook that calls runtime.Goexit ends the goroutine
// instead, and an earlier hook's panic is lost, as Go's deferred calls lose
// it.
func JoinPoolHooks(hooks ...pool.Hooks) pool.Hooks {
	var j pool.Hooks
	var release []func()
	var acquire []func(pool.AcquireEvent)
	var create []func(pool.CreateEvent)
	var closed []func(pool.CloseReason)
	var failed []func(error)
	for _, h := range hooks {
		if h.OnAcquire != nil {
			acquire = append(acquire, h.OnAcquire)
		}
		if h.OnCreate != nil {
			create = append(create, h.OnCreate)
		}
		if h.OnClose != nil {
			closed = append(closed, h.OnClose)
		}
		if h.OnHealthCheckFail != nil {
			failed = append(failed, h.OnHealthCheckFail)
		}
		if h.OnRelease != nil {
			release = append(release, h.OnRelease)
		}
	}
	j.OnAcquire = join(acquire)
	j.OnCreate = join(create)
	j.OnClose = join(closed)
	j.OnHealthCheckFail = join(failed)
	switch len(release) {
	case 0:
	case 1:
		j.OnRelease = release[0]
	default:
		j.OnRelease = func() { callEachRelease(release) }
	}
	return j
}

// join returns a func that calls each of fs in order, or nil if there is none.
func join[E any](fs []func(E)) func(E) {
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	}
	return func(e E) { callEach(fs, e) }
}

// callEach calls each of fs, at least one, with e, in order. Those after
// one that panics or calls runtime.Goexit are called all the same, by a
// deferred call, as it unwinds: hooks of the user's joined after the
// Collector's, whose hooks panic on a source with no name, must not lose
// the event to them. The panic then goes on.
func callEach[E any](fs []func(E), e E) {
	if len(fs) > 1 {
		defer callEach(fs[1:], e)
	}
	fs[0](e)
}

// callEachRelease is callEach for OnRelease, which takes no event.
func callEachRelease(fs []func()) {
	if len(fs) > 1 {
		defer callEachRelease(fs[1:])
	}
	fs[0]()
}

var _ prometheus.Collector = (*Collector)(nil)
