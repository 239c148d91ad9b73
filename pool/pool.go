package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// ErrClosed is returned by Acquire once the pool is closed.
var ErrClosed = errors.New("pool: closed")

// Stats are a snapshot of a Pool.
type Stats struct {
	Idle         int // resources ready in the pool
	InUse        int // resources acquired and not yet released
	Total        int // Idle + InUse + Constructing + Closing
	Max          int // Config.MaxSize
	Constructing int // calls to New under way
	Closing      int // calls to Config.Close under way

	AcquireCount     int64         // successful Acquires and TryAcquires
	EmptyAcquires    int64         // Acquires that found no idle resource
	WaitCount        int64         // of those, the ones that found the pool full
	WaitDuration     time.Duration // the time Acquires waited, for a release or a new resource
	CanceledAcquires int64         // Acquires that ended with their ctx

	Created        int64 // resources made
	CreateFailures int64 // calls to New that failed, or that the breaker refused
	ClosedIdle     int64 // closed for MaxIdleTime
	ClosedLifetime int64 // closed for MaxLifetime
	ClosedHealth   int64 // closed for failing HealthCheck
	ClosedDestroy  int64 // closed by Destroy
	ClosedPool     int64 // closed by Close
	CloseErrors    int64 // calls to Config.Close that returned an error
}

// A Pool holds up to MaxSize resources of type T (connections, clients, big
// buffers), makes them on demand with Config.New, and lends them out.
//
// Acquire takes the idle resource used last (the warmest), health-checking it
// if it has not been used for a while; else it makes one if the pool has room;
// else it waits, first in, first out, for one to be released. Resources expire
// after MaxLifetime or MaxIdleTime, and a goroutine keeps MinIdle of them
// ready.
//
// An Acquire and a Release of an idle resource take one lock each and
// allocate nothing; they read the clock only for the features that need it
// (lifetimes, idle times, health checks).
//
// Use New; the zero Pool is not usable. A Pool must not be copied after first
// use. It is safe for concurrent use by multiple goroutines. Close it when
// done: it stops its goroutines.
type Pool[T any] struct {
	_   nocopy.NoCopy
	cfg Config[T]

	timed bool // a feature needs the time of checkouts and releases

	ctx    context.Context // canceled by Close: stops creations and maintenance
	cancel context.CancelFunc
	wg     sync.WaitGroup // the pool's goroutines
	kick   chan struct{}  // wakes the maintainer early

	// waitNs is Stats.WaitDuration. Every Acquire that waited adds to it
	// without the lock, so it has a cache line of its own: beside q's lock,
	// which the same goroutines contend for, each add would steal that too.
	_      [64]byte
	waitNs atomic.Int64
	_      [56]byte

	// q holds the Acquires that wait; its lock guards the fields below.
	q       waitq.Queue[handoff[T]]
	closers waitq.List[struct{}] // Close calls waiting for the resources out
	idle    []*Resource[T]       // the last is the warmest
	inUse   int
	making  int // calls to New under way
	closing int // calls to Config.Close under way: they still count against MaxSize
	closed  bool
	live    map[*Resource[T]]struct{} // every resource made and not yet closed
	stats   Stats                     // the counters; the gauges are computed
}

// handoff is what a waiting Acquire receives: a resource, or an error.
type handoff[T any] struct {
	r   *Resource[T]
	err error
}

// New returns a Pool with the given configuration. It returns an error for a
// bad configuration: a nil New, MaxSize below 1, MinIdle above MaxSize, a
// negative duration, LeakThreshold without OnLeak.
func New[T any](cfg Config[T]) (*Pool[T], error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	p := &Pool[T]{
		cfg:   cfg,
		timed: cfg.MaxLifetime > 0 || cfg.MaxIdleTime > 0 || cfg.HealthCheck != nil,
		kick:  make(chan struct{}, 1),
		live:  make(map[*Resource[T]]struct{}),
	}
	p.stats.Max = cfg.MaxSize
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if cfg.background() {
		p.wg.Add(1)
		go p.maintain()
	}
	return p, nil
}

// Acquire returns an idle resource, health-checked if it was not used lately,
// or a new one if the pool has room, or waits, after the Acquires already
// waiting, for one to be released, until ctx is done.
//
// On failure it returns ctx.Err(), ErrClosed, or the error of Config.New (or
// of the breaker that guards it) for the resource made for this wait; a ctx
// that is already done fails even when a resource is idle. A resource handed
// over at the same moment that ctx ends goes to the next waiter, or back to
// the pool: it is never lost.
func (p *Pool[T]) Acquire(ctx context.Context) (*Resource[T], error) {
	if err := waitq.CtxErr(ctx, "pool"); err != nil {
		return nil, err
	}
	waited, paused := false, false
	for {
		p.q.Lock()
		if p.closed {
			p.q.Unlock()
			return nil, ErrClosed
		}
		if r := p.popIdleLocked(); r != nil {
			p.q.Unlock()
			ok, err := p.checkOut(ctx, r)
			if ok {
				p.acquired(r)
				return r, nil
			}
			if err != nil {
				return nil, err
			}
			continue // r was bad, and is closed: look again
		}
		full := p.totalLocked() >= p.cfg.MaxSize // only a release can serve us
		if !waited {
			waited = true
			p.stats.EmptyAcquires++
			if full {
				p.stats.WaitCount++
			}
		}
		if full && !paused {
			// Let a holder that is about to release do so, and look again,
			// before queueing (see waitq.Pause).
			paused = true
			p.q.Unlock()
			waitq.Pause()
			continue
		}
		w := p.q.Push(handoff[T]{})
		p.fillLocked(ctx)
		p.q.Unlock()
		start := clock.Now() // off the lock: it costs more than the queueing

		h, ok := p.q.Wait(ctx, w)
		p.waitNs.Add(clock.Now() - start)
		if !ok {
			p.abandon(w)
			return nil, ctx.Err()
		}
		if h.err != nil {
			return nil, h.err
		}
		// Handed over by a Release or fresh from New: it works.
		p.acquired(h.r)
		return h.r, nil
	}
}

// abandon takes w, a waiting Acquire whose ctx ended, out of the queue. A
// resource handed to it as ctx ended goes to the next waiter, or back to the
// pool; unless a Close that gave up waiting for the resources out has closed
// it meanwhile.
func (p *Pool[T]) abandon(w *waitq.Waiter[handoff[T]]) {
	p.q.Lock()
	closeIt := false
	h, granted, _ := p.q.Cancel(w)
	if granted && h.r != nil {
		p.stats.AcquireCount--
		if h.r.state != stateClosed {
			closeIt = p.releaseLocked(h.r)
		}
	}
	p.stats.CanceledAcquires++
	p.q.Unlock()
	if closeIt {
		p.closeValue(h.r)
	}
}

// TryAcquire returns an idle resource if there is one and nobody waits, and
// never waits or makes one. It skips HealthCheck, which could block.
func (p *Pool[T]) TryAcquire() (*Resource[T], bool) {
	for {
		p.q.Lock()
		if p.closed {
			p.q.Unlock()
			return nil, false
		}
		r := p.popIdleLocked()
		p.q.Unlock()
		if r == nil {
			return nil, false
		}
		if !p.expired(r, p.now()) {
			p.acquired(r)
			return r, true
		}
	}
}

// popIdleLocked takes the warmest idle resource, if any and nobody waits.
// p.q must be locked.
func (p *Pool[T]) popIdleLocked() *Resource[T] {
	n := len(p.idle)
	if n == 0 || p.q.Len() > 0 {
		return nil
	}
	r := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	r.state = stateInUse
	p.inUse++
	p.stats.AcquireCount++
	if len(p.idle) < p.cfg.MinIdle {
		p.wake()
	}
	return r
}

// With acquires a resource, calls fn with its value, and releases it; if fn
// panics, it destroys it instead, since it may be left broken, and the panic
// goes on. It returns Acquire's error, or fn's.
func (p *Pool[T]) With(ctx context.Context, fn func(T) error) error {
	r, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if ok {
			r.Release()
		} else {
			r.Destroy()
		}
	}()
	err = fn(r.v)
	ok = true
	return err
}

// Stats returns a snapshot of the pool.
func (p *Pool[T]) Stats() Stats {
	p.q.Lock()
	defer p.q.Unlock()
	s := p.stats
	s.Idle = len(p.idle)
	s.InUse = p.inUse
	s.Constructing = p.making
	s.Closing = p.closing
	s.Total = p.totalLocked()
	s.WaitDuration = time.Duration(p.waitNs.Load())
	return s
}

// drainedLocked releases the Close calls waiting for the pool to drain, once
// it has. p.q must be locked.
func (p *Pool[T]) drainedLocked() {
	if !p.closed || p.inUse > 0 || p.making > 0 || p.closing > 0 {
		return
	}
	for w := p.closers.Front(); w != nil; w = p.closers.Front() {
		p.closers.Grant(&p.q.Mutex, w, struct{}{})
	}
}

// Close closes the pool: Acquire fails with ErrClosed from now on, waiting
// Acquires are released with ErrClosed, and idle resources are closed. Close
// then waits for the resources out to come back (each is closed as it is
// released) and for calls to New under way, which it cancels, until ctx is
// done; then it closes the resources still out, whose later Release or Destroy
// does nothing, and returns ctx.Err(). A resource under a health check is
// left to the check, whose end closes it: Config.Close never runs on a value
// while Config.HealthCheck does. Close returns only when the pool's
// goroutines have ended, so New should honour its context. Closing a closed
// pool waits again, as the first Close does.
func (p *Pool[T]) Close(ctx context.Context) error {
	p.q.Lock()
	var idle []*Resource[T]
	if !p.closed {
		p.closed = true
		p.cancel()
		for w := p.q.Front(); w != nil; w = p.q.Front() {
			p.q.Grant(w, handoff[T]{err: ErrClosed})
		}
		idle = p.idle
		p.idle = nil
		for _, r := range idle {
			p.retireLocked(r, &p.stats.ClosedPool)
		}
	}
	p.q.Unlock()
	for _, r := range idle {
		p.closeValue(r)
	}
	p.q.Lock()
	var w *waitq.Waiter[struct{}]
	if p.inUse > 0 || p.making > 0 || p.closing > 0 {
		w = p.closers.Push(struct{}{})
	}
	p.q.Unlock()

	var err error
	if w != nil {
		if _, ok := p.closers.Wait(ctx, w); !ok {
			p.q.Lock()
			if _, drained, _ := p.closers.Cancel(w); !drained {
				err = ctx.Err()
			}
			var out []*Resource[T]
			for r := range p.live {
				if r.state == stateInUse {
					out = append(out, r)
					p.closeLocked(r, &p.stats.ClosedPool)
				}
			}
			p.q.Unlock()
			for _, r := range out {
				p.closeValue(r)
			}
		}
	}
	p.wg.Wait()
	return err
}
