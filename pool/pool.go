package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
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

type resState int

const (
	stateIdle    resState = iota // in the pool
	stateInUse                   // acquired
	stateChecked                 // out of the pool for a health check, an Acquire's or the sweep's
	stateClosed                  // closed; a late Release or Destroy is ignored
)

// A Resource is one resource of a Pool, acquired.
type Resource[T any] struct {
	p        *Pool[T]
	v        T
	created  int64 // on clock
	expires  int64 // on clock; 0 for never
	lastUsed int64 // on clock, when the pool times releases
	state    resState

	leak *time.Timer // Config.LeakThreshold's report, while acquired
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

// Value returns the resource.
func (r *Resource[T]) Value() T { return r.v }

// CreatedAt returns when the resource was made.
func (r *Resource[T]) CreatedAt() time.Time { return clock.Time(r.created) }

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
			p.q.Lock()
			closeIt := false
			h, granted, _ := p.q.Cancel(w)
			if granted && h.r != nil {
				// Handed a resource as ctx ended: pass it on.
				p.stats.AcquireCount--
				closeIt = p.releaseLocked(h.r)
			}
			p.stats.CanceledAcquires++
			p.q.Unlock()
			if closeIt {
				p.closeValue(h.r)
			}
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

func (p *Pool[T]) now() int64 {
	if !p.timed {
		return 0
	}
	return clock.Now()
}

// expired closes r and reports true if it has outlived MaxLifetime or
// MaxIdleTime. r is out of the pool, acquired.
func (p *Pool[T]) expired(r *Resource[T], now int64) bool {
	reason := p.expiry(r, now)
	if reason == nil {
		return false
	}
	p.q.Lock()
	p.stats.AcquireCount--
	if r.state == stateClosed {
		// Close gave up waiting for the resources out, r among them, and
		// closed it: the caller finds the pool closed when it looks again.
		p.q.Unlock()
		return true
	}
	p.closeLocked(r, reason)
	p.fillLocked(p.ctx)
	p.q.Unlock()
	p.closeValue(r)
	return true
}

// expiry returns the counter to charge if r has expired at now, or nil.
func (p *Pool[T]) expiry(r *Resource[T], now int64) *int64 {
	switch {
	case !p.timed:
		return nil
	case r.expires != 0 && now >= r.expires:
		return &p.stats.ClosedLifetime
	case p.cfg.MaxIdleTime > 0 && r.lastUsed != 0 && now-r.lastUsed >= int64(p.cfg.MaxIdleTime):
		return &p.stats.ClosedIdle
	}
	return nil
}

// checkOut vets an idle resource just taken: expired, or failing its health
// check, it is closed and checkOut returns false. If ctx ends during the
// check, the resource goes back and checkOut returns ctx.Err().
func (p *Pool[T]) checkOut(ctx context.Context, r *Resource[T]) (bool, error) {
	if !p.timed {
		return true, nil
	}
	now := clock.Now()
	if p.expired(r, now) {
		return false, nil
	}
	if p.cfg.HealthCheck == nil || (p.cfg.HealthCheckSkip > 0 && now-r.lastUsed < int64(p.cfg.HealthCheckSkip)) {
		return true, nil
	}
	// Mark r as under check, as the background sweep does, so that a Close
	// that gives up waiting leaves it alone rather than close it under the
	// check: the end of the check closes it instead.
	p.q.Lock()
	if r.state == stateClosed {
		// Close gave up waiting for the resources out, r among them, and
		// closed it before the check began.
		p.stats.AcquireCount--
		p.q.Unlock()
		return false, ErrClosed
	}
	r.state = stateChecked
	p.q.Unlock()
	err := p.healthCheck(ctx, r)
	p.q.Lock()
	switch {
	case p.closed:
		p.stats.AcquireCount--
		p.closeLocked(r, &p.stats.ClosedPool)
		p.q.Unlock()
		p.closeValue(r)
		return false, ErrClosed
	case err == nil:
		r.state = stateInUse
		p.q.Unlock()
		return true, nil
	case ctx.Err() != nil:
		// The caller gave up, not the resource.
		p.stats.AcquireCount--
		p.stats.CanceledAcquires++
		closeIt := p.releaseLocked(r)
		p.q.Unlock()
		if closeIt {
			p.closeValue(r)
		}
		return false, ctx.Err()
	}
	p.stats.AcquireCount--
	p.closeLocked(r, &p.stats.ClosedHealth)
	p.fillLocked(p.ctx)
	p.q.Unlock()
	p.closeValue(r)
	return false, nil
}

func (p *Pool[T]) healthCheck(ctx context.Context, r *Resource[T]) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.HealthCheckTimeout)
	defer cancel()
	return p.cfg.HealthCheck(ctx, r.v)
}

// acquired starts the leak report of a resource just acquired.
func (p *Pool[T]) acquired(r *Resource[T]) {
	if p.cfg.LeakThreshold <= 0 {
		return
	}
	var pcs [32]uintptr
	stack := pcs[:runtime.Callers(3, pcs[:])]
	at := clock.Now()
	onLeak, threshold := p.cfg.OnLeak, p.cfg.LeakThreshold
	leak := time.AfterFunc(threshold, func() {
		onLeak(Leak{Acquired: clock.Time(at), Held: time.Duration(clock.Now() - at), Stack: formatStack(stack)})
	})
	// Under the lock: a Close that gives up waiting may be closing r, and
	// stopping its report, right now.
	p.q.Lock()
	if r.state == stateInUse {
		r.leak = leak
	} else {
		leak.Stop() // closed by Close already
	}
	p.q.Unlock()
}

func formatStack(pcs []uintptr) string {
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "%s\n\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			return b.String()
		}
	}
}

// Release gives r back to the pool: to the oldest waiting Acquire, or to the
// idle resources. A resource past MaxLifetime is closed instead. After Close
// has closed r, Release does nothing.
//
// Release panics if r is not acquired: released already, say.
func (r *Resource[T]) Release() {
	p := r.p
	now := p.now()
	p.q.Lock()
	if !r.endUseLocked("Release") {
		p.q.Unlock()
		return
	}
	if p.closed {
		p.closeLocked(r, &p.stats.ClosedPool)
	} else if r.expires != 0 && now >= r.expires {
		p.closeLocked(r, &p.stats.ClosedLifetime)
		p.fillLocked(p.ctx)
	} else {
		r.lastUsed = now
		if !p.releaseLocked(r) {
			p.q.Unlock()
			return
		}
	}
	p.q.Unlock()
	p.closeValue(r)
}

// Destroy closes r instead of giving it back, for a resource that is broken;
// its place in the pool frees. After Close has closed r, Destroy does nothing.
//
// Destroy panics if r is not acquired: released already, say.
func (r *Resource[T]) Destroy() {
	p := r.p
	p.q.Lock()
	if !r.endUseLocked("Destroy") {
		p.q.Unlock()
		return
	}
	p.closeLocked(r, &p.stats.ClosedDestroy)
	p.fillLocked(p.ctx)
	p.q.Unlock()
	p.closeValue(r)
}

// endUseLocked checks that r is acquired, and stops its leak report. It
// returns false if Close closed r already. p.q must be locked.
func (r *Resource[T]) endUseLocked(fn string) bool {
	switch r.state {
	case stateInUse:
	case stateClosed:
		return false
	default:
		r.p.q.Unlock()
		panic("pool: " + fn + " of a resource not acquired (released already?)")
	}
	if r.leak != nil {
		r.leak.Stop()
		r.leak = nil
	}
	return true
}

// releaseLocked hands r, acquired or checked, to the oldest waiter or to the idle
// resources. If the pool is closed, it takes r out instead and returns true:
// the caller must close its value once unlocked. p.q must be locked.
func (p *Pool[T]) releaseLocked(r *Resource[T]) (closeIt bool) {
	if p.closed {
		p.closeLocked(r, &p.stats.ClosedPool)
		return true
	}
	if w := p.q.Front(); w != nil {
		p.stats.AcquireCount++
		r.state = stateInUse // from a background check, it was stateChecked
		p.q.Grant(w, handoff[T]{r: r})
		return false
	}
	r.state = stateIdle
	p.inUse--
	p.idle = append(p.idle, r)
	return false
}

// closeLocked takes r, acquired, out of the pool, charging counter; the
// caller closes its value once unlocked, with closeValue. p.q must be locked.
func (p *Pool[T]) closeLocked(r *Resource[T], counter *int64) {
	p.inUse--
	p.retireLocked(r, counter)
}

// retireLocked takes r, no longer counted as idle or in use, out of the pool.
// It counts against MaxSize until closeValue has closed it, so that the
// backend never sees more than MaxSize at once. p.q must be locked.
func (p *Pool[T]) retireLocked(r *Resource[T], counter *int64) {
	if r.leak != nil {
		r.leak.Stop()
		r.leak = nil
	}
	r.state = stateClosed
	delete(p.live, r)
	p.closing++
	*counter++
}

// closeValue calls Config.Close on the value of r, retired, then frees its
// place. The lock must not be held.
func (p *Pool[T]) closeValue(r *Resource[T]) {
	var err error
	if p.cfg.Close != nil {
		err = p.cfg.Close(r.v)
	}
	p.q.Lock()
	p.closing--
	if err != nil {
		p.stats.CloseErrors++
	}
	p.fillLocked(p.ctx)
	p.drainedLocked()
	p.q.Unlock()
}

// fillLocked starts making resources for the waiters that no call to New
// under way will serve, while the pool has room. p.q must be locked.
func (p *Pool[T]) fillLocked(ctx context.Context) {
	for p.q.Len() > p.making && p.totalLocked() < p.cfg.MaxSize && !p.closed {
		p.startMaking(ctx)
	}
}

func (p *Pool[T]) totalLocked() int { return len(p.idle) + p.inUse + p.making + p.closing }

// startMaking makes a resource in a goroutine of its own, which keeps the
// values of ctx but not its cancellation: the Acquire that asked may give up,
// and the resource still joins the pool. p.q must be locked.
func (p *Pool[T]) startMaking(ctx context.Context) {
	p.making++
	p.wg.Add(1)
	go p.make(context.WithoutCancel(ctx))
}

func (p *Pool[T]) make(parent context.Context) {
	defer p.wg.Done()
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(p.ctx, cancel) // Close cancels it
	v, err := p.newValue(ctx)
	stop()
	cancel()

	p.q.Lock()
	p.making--
	if err != nil {
		p.stats.CreateFailures++
		// Tell the oldest waiter that no other call to New will serve, so
		// that waiters fail fast, rather than hang, while the backend is
		// down. The place this call held is free again: make one for the
		// waiters behind it, which would otherwise wait for a Release that
		// may never come. Each gets a resource, or the error of the call
		// made for it.
		if w := p.q.Front(); w != nil && p.q.Len() > p.making {
			p.q.Grant(w, handoff[T]{err: err})
		}
		p.fillLocked(p.ctx)
		p.drainedLocked()
		p.q.Unlock()
		return
	}
	r := &Resource[T]{p: p, v: v, state: stateInUse, created: clock.Now()}
	r.lastUsed = r.created
	if p.cfg.MaxLifetime > 0 {
		jitter := p.cfg.MaxLifetimeJitter * rand.Float64()
		r.expires = r.created + int64(float64(p.cfg.MaxLifetime)*(1-jitter))
	}
	p.stats.Created++
	p.live[r] = struct{}{}
	p.inUse++
	closeIt := p.releaseLocked(r)
	p.q.Unlock()
	if closeIt {
		p.closeValue(r)
	}
}

func (p *Pool[T]) newValue(ctx context.Context) (T, error) {
	if p.cfg.Breaker != nil {
		return breaker.Do(ctx, p.cfg.Breaker, p.cfg.New)
	}
	return p.cfg.New(ctx)
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

// wake makes the maintainer look early, to top MinIdle up.
func (p *Pool[T]) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
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

// maintain is the pool's goroutine: every HealthCheckPeriod, and when
// Acquire takes the idle resources below MinIdle, it sweeps the idle
// resources and tops them up.
func (p *Pool[T]) maintain() {
	defer p.wg.Done()
	t := time.NewTicker(p.cfg.HealthCheckPeriod)
	defer t.Stop()
	for {
		p.sweep()
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

// sweep closes the idle resources that have expired, health-checks those not
// used lately, and makes resources until MinIdle are idle or being made.
func (p *Pool[T]) sweep() {
	now := p.now()
	var expired, check []*Resource[T]
	p.q.Lock()
	if p.closed {
		p.q.Unlock()
		return
	}
	keep := p.idle[:0]
	for _, r := range p.idle {
		switch reason := p.expiry(r, now); {
		case reason != nil:
			p.retireLocked(r, reason)
			expired = append(expired, r)
		case p.cfg.HealthCheck != nil && now-r.lastUsed >= int64(p.cfg.HealthCheckSkip):
			// Out of the pool for its check, counted as in use so that
			// MaxSize and Close account for it. Close does not take it
			// from us, even when it gives up waiting: the check's end
			// hands it back, and it is closed then.
			r.state = stateChecked
			p.inUse++
			check = append(check, r)
		default:
			keep = append(keep, r)
		}
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.fillLocked(context.Background())
	p.q.Unlock()
	for _, r := range expired {
		p.closeValue(r)
	}

	for _, r := range check {
		err := p.healthCheck(p.ctx, r)
		p.q.Lock()
		closeIt := true
		if err != nil {
			p.closeLocked(r, &p.stats.ClosedHealth)
			p.fillLocked(context.Background())
		} else {
			closeIt = p.releaseLocked(r)
		}
		p.q.Unlock()
		if closeIt {
			p.closeValue(r)
		}
	}

	p.q.Lock()
	for !p.closed && len(p.idle)+p.making < p.cfg.MinIdle && p.totalLocked() < p.cfg.MaxSize {
		p.startMaking(context.Background())
	}
	p.q.Unlock()
}
