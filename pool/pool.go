package pool

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
	"github.com/ctxsync/ctxsync/internal/closed"
	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// ErrClosed is returned by Acquire once the pool is closed.
var ErrClosed = closed.Pool

// ErrBroken marks an error that leaves a resource broken: a function given to
// With that returns an error wrapping it (errors.Is) has its resource closed
// rather than given back. See Config.Broken.
var ErrBroken = errors.New("pool: resource broken")

// Stats are a snapshot of a Pool.
type Stats struct {
	Name string // Config.Name

	Idle         int // resources ready in the pool
	InUse        int // resources acquired and not yet released, or under the background HealthCheck
	Total        int // Idle + InUse + Constructing + Closing
	Max          int // Config.MaxSize
	MinIdle      int // Config.MinIdle
	Constructing int // calls to New under way
	Waiting      int // Acquires waiting now, for a release or a new resource
	Closing      int // calls to Config.Close under way

	AcquireCount     int64         // successful Acquires and TryAcquires
	EmptyAcquires    int64         // Acquires that found no idle resource
	WaitCount        int64         // of those, the ones that queued: they waited for a release or a new resource
	WaitDuration     time.Duration // the time those waited in all: WaitDuration / WaitCount is the mean wait
	CanceledAcquires int64         // Acquires that returned ctx.Err(), but for those whose ctx was done at the call

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
// Use New; the zero Pool is not usable, and panics at first use. A Pool must
// not be copied after first use. It is safe for concurrent use by multiple
// goroutines. Close it when done: it stops its goroutines. A Release is
// synchronized before the return of the Acquire that receives the resource.
//
// # Panics of the functions of Config
//
// A function of Config that panics leaves the pool whole: the resource it
// was given is closed (or, if the panic came from Close, counted as closed),
// its place freed, and the panic goes on in the goroutine that ran the
// function. HealthCheck runs in Acquire; Close in Release, Destroy, With,
// Close, and in Acquire and TryAcquire for an idle resource found expired;
// Broken in With. Config.New runs in a goroutine of its own (see
// Config.New): its panic is handed to the Acquire that its error would have
// gone to, which panics with an error that carries the value (errors.Unwrap
// gives it, if it is an error) and New's stack. The functions of
// Config.Breaker's Settings run in that goroutine too, and a panic of theirs
// goes the same way, its error saying that a function of the Breaker's
// Settings panicked, not New (its stack shows which); a resource New had
// made by then is closed first, and if that Close panics too, its panic is
// counted in Stats.CloseErrors and dropped: the first panic is the one
// raised. If New panics and a function of the Breaker's Settings panics in
// turn as it counts that failure, the second panic replaces New's, as it
// would in any goroutine, and the error names the Breaker's Settings. A
// call of runtime.Goexit there fails the Acquire with an error that names
// New, or the Breaker's Settings, likewise; or Close, whose Goexit as it
// closes the value New made nothing can stop: the first panic is then lost,
// and the value counted in Stats.CloseErrors.
//
// The pool's own goroutines run what no caller asked for: the background
// HealthCheck; Close of what the sweep finds expired, or of a resource made
// after Close; New for MinIdle, or for an Acquire that has given up; OnLeak.
// A panic there is not recovered, and ends the program once the pool is
// whole, as a panic in any goroutine does. Hiding it would hide a bug; a
// function that may panic for a reason it can live with should recover
// itself. A call of runtime.Goexit there (a test's t.FailNow in a
// HealthCheck) leaves the pool whole too: the background check counts as
// failed, and the sweeps go on.
//
// # Pools and testing/synctest bubbles
//
// A pool made outside a bubble works inside one (a package-level pool that
// bubbled tests share), and one made inside a bubble works after it has
// ended, with these exceptions, which the Go runtime imposes:
//
//   - A pool with background work (MinIdle, HealthCheck, MaxIdleTime,
//     MaxLifetime or HealthCheckPeriod set) runs it in a goroutine started by
//     New, in New's bubble or outside any. Made inside a bubble, it must be
//     closed there: the bubble cannot end while that goroutine runs (a Close
//     again after the bubble, a deferred one say, returns at once). Made
//     outside, that goroutine must not wake a goroutine of a bubble: the
//     runtime ends the program ("send on synctest channel from outside
//     bubble") when it does. That happens only when a background health
//     check, or a call to New that the background goroutine started (for
//     MinIdle, or for waiters), ends while an Acquire or a Close waits in a
//     bubble; a pool without background work is free of it.
//   - With LeakThreshold, a resource acquired inside a bubble must be
//     released or destroyed inside it, and the pool not closed outside it
//     while that resource is out: the runtime refuses to stop a bubble's
//     timer from outside.
//
// Times kept on one clock and read on another that seem in the future there
// (a resource made outside a bubble and found idle inside one, whose clock
// starts in 2000; or released in a bubble and found in the next one, whose
// clock starts at the same instant, at an earlier virtual time) are taken as
// unknown: such a resource is past MaxLifetime and MaxIdleTime if they are
// set, and due for its health check. Found in the next bubble at a later
// virtual time, it is taken as idle, and as old, for the difference of the
// two virtual times: no clock tells the bubbles apart.
type Pool[T any] struct {
	_   nocopy.NoCopy
	cfg Config[T]

	timed bool // a feature needs the time of checkouts and releases

	kick chan struct{} // wakes the maintainer early
	quit chan struct{} // closed by Close: stops the maintainer; nil if there is none

	// stopped is closed when the maintainer has ended; nil if there is
	// none. The calls to New are counted in making instead: a WaitGroup
	// would be Added to both inside and outside a synctest bubble when a
	// pool made outside is used inside, which the runtime forbids.
	stopped chan struct{}

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
	// sweeping is set while the maintainer's sweep runs user code, or has
	// taken the resources it will run it on (see sweep).
	sweeping bool
	live     map[*Resource[T]]struct{} // every resource made and not yet closed

	// ended is set once the maintainer has closed stopped: a Close then
	// need not look at the channel, which may belong to a synctest bubble
	// that has ended (see Close).
	ended bool

	// cancels cancel the contexts of the calls to New under way and of the
	// background health checks (see closable); Close calls them.
	cancels    map[uint64]context.CancelFunc
	nextCancel uint64

	stats Stats // the counters; the gauges are computed
}

// handoff is what a waiting Acquire receives: a resource, an error, or the
// panic of the call to New made for it; and, while it waits, its ctx.
type handoff[T any] struct {
	r     *Resource[T]
	err   error
	panic *newPanic

	// check is set with an r whose HealthCheck is owed (see
	// Resource.unchecked): the Acquire runs it before it keeps r.
	check bool

	// ask is the ctx of the waiting Acquire, while it is queued: a call to
	// New made for it gets its values (see fillLocked). Every grant
	// replaces it, so the pool keeps no caller's ctx once it is served.
	ask context.Context
}

// A newPanic is what Acquire panics with when the call to Config.New that
// would have served it panicked, in its own goroutine: the function that
// panicked (New, or one of its Breaker's), the value, and the stack where it
// was raised, which the Acquire's stack would not show.
type newPanic struct {
	fn    string // "Config.New", or breakerFuncs
	value any
	stack []byte
}

func (e *newPanic) Error() string {
	return fmt.Sprintf("pool: %s panicked: %v\n\n%s", e.fn, e.value, e.stack)
}

// Unwrap returns the value New panicked with, if it is an error.
func (e *newPanic) Unwrap() error {
	err, _ := e.value.(error)
	return err
}

// errZero is what the zero Pool panics with.
const errZero = "pool: use New; the zero Pool is not usable"

// mustBeMade panics if p was not made by New.
func (p *Pool[T]) mustBeMade() {
	if p == nil || p.cfg.New == nil {
		panic(errZero)
	}
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

		cancels: make(map[uint64]context.CancelFunc),
	}
	p.stats.Name = cfg.Name
	p.stats.Max = cfg.MaxSize
	p.stats.MinIdle = cfg.MinIdle
	if cfg.background() {
		p.quit = make(chan struct{})
		p.stopped = make(chan struct{})
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
// that is already done fails even when a resource is idle. A resource is never
// handed to an Acquire whose ctx has ended: it goes to the next waiter, or
// back to the pool. One handed over at the same moment that ctx ends goes
// back the same way: it is never lost.
//
// Acquire panics if ctx is nil, or with the panic of HealthCheck or New (see
// Pool).
func (p *Pool[T]) Acquire(ctx context.Context) (*Resource[T], error) {
	// Small enough to be inlined: the caller calls the loop itself.
	return p.acquire(ctx, nil)
}

// acquireReported is Acquire, told to Hooks.OnAcquire.
func (p *Pool[T]) acquireReported(ctx context.Context) (*Resource[T], error) {
	e := AcquireEvent{Name: p.cfg.Name}
	r, err := p.acquire(ctx, &e)
	if err != nil {
		e.Err = err
		p.cfg.Hooks.OnAcquire(e) // nothing to give back if it panics
		return nil, err
	}
	// reportAcquire's work, in line: one call fewer on every Acquire.
	ok := false
	defer func() {
		if !ok {
			r.Release()
		}
	}()
	p.cfg.Hooks.OnAcquire(e)
	ok = true
	return r, nil
}

// reportAcquire tells Hooks.OnAcquire of e, the Acquire's or TryAcquire's
// that got r (nil if it failed). If the hook panics, r goes back to the pool
// first: the caller will never have it.
func (p *Pool[T]) reportAcquire(r *Resource[T], e AcquireEvent) {
	h := p.cfg.Hooks.OnAcquire
	if h == nil {
		return
	}
	ok := false
	defer func() {
		if !ok && r != nil {
			r.Release()
		}
	}()
	h(e)
	ok = true
}

// acquire is Acquire. If e is not nil, it tells there whether it waited,
// and how long, for Hooks.OnAcquire.
func (p *Pool[T]) acquire(ctx context.Context, e *AcquireEvent) (*Resource[T], error) {
	p.mustBeMade()
	if e == nil && p.cfg.Hooks.OnAcquire != nil {
		return p.acquireReported(ctx)
	}
	if err := waitq.CtxErr(ctx, "pool"); err != nil {
		return nil, err
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	waited, paused, queued := false, false, false
	for {
		p.q.Lock()
		if p.closed {
			p.q.Unlock()
			return nil, ErrClosed
		}
		// Look at ctx again under the lock, which every Release takes: a
		// resource released after ctx ended is not ours (nor, once queued,
		// handed to us: see waitq.List.Front).
		if waitq.Ended(done) {
			// Under way (past the look at ctx at the call), this Acquire
			// ended with its ctx: in its pause before queueing, say.
			p.stats.CanceledAcquires++
			p.q.Unlock()
			return nil, waitq.DoneErr(ctx)
		}
		if r := p.popIdleLocked(); r != nil {
			p.q.Unlock()
			ok, err := p.checkOut(ctx, r, nil)
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
		}
		if full && !paused {
			// Let a holder that is about to release do so, and look again,
			// before queueing (see waitq.Pause).
			paused = true
			p.q.Unlock()
			waitq.Pause()
			continue
		}
		// Counted with the wait, whether for a release or a new resource,
		// so that WaitDuration / WaitCount is the mean wait; once per
		// Acquire, however often it waits (a resource handed to it may fail
		// the check it owed: see h.check below), so that WaitCount stays
		// a count of Acquires, at most EmptyAcquires.
		if !queued {
			queued = true
			p.stats.WaitCount++
		}
		w := p.q.PushDone(done, handoff[T]{ask: ctx})
		p.fillLocked()
		p.q.Unlock()
		// Waits on w, and again at the head of the line if a resource
		// handed to us fails the check it owed (see h.check).
		for {
			start := clock.Now() // off the lock: it costs more than the queueing
			h, ok := p.q.Wait(done, w)
			wait := clock.Now() - start
			p.waitNs.Add(wait)
			if e != nil {
				// All its waits: what WaitDuration adds up for it.
				e.Waited, e.Wait = true, e.Wait+time.Duration(wait)
			}
			if !ok {
				if np := p.abandon(w); np != nil {
					p.raise(e, np)
				}
				return nil, waitq.DoneErr(ctx)
			}
			if h.panic != nil {
				p.raise(e, h.panic)
			}
			if h.err != nil {
				return nil, h.err
			}
			if !h.check {
				// Handed over by a Release or fresh from New: it works.
				p.acquired(h.r)
				return h.r, nil
			}
			// Given back by an Acquire that took it idle and gave up
			// before its check could tell: the check is ours to run.
			// Taken unchecked, a broken resource would reach us as
			// working. If it fails, r is closed, and we wait again where
			// we were, at the head of the line, for the replacement made
			// then: queued anew at the back, we would be overtaken by
			// those who queued while we checked.
			ok, again, err := p.checkOwed(ctx, done, h.r)
			if ok {
				p.acquired(h.r)
				return h.r, nil
			}
			if err != nil {
				return nil, err
			}
			if again == nil {
				break // the pool closed as r was closed: look again
			}
			w = again
		}
	}
}

// checkOwed runs the check that r, handed to the Acquire waiting under ctx
// (done is ctx.Done()), owed (see handoff.check), as checkOut does. If r
// fails, the Acquire is queued again at the head of the line as r is
// closed, and again is its place. If the closing panics (Config.Close, a
// hook), the place is given up first, as a waiter whose ctx ended gives it
// up: no goroutine would wait there, and what came to it would be lost.
// (A function of its own, for the deferred call: see closeFailed.)
func (p *Pool[T]) checkOwed(ctx context.Context, done <-chan struct{}, r *Resource[T]) (ok bool, again *waitq.Waiter[handoff[T]], err error) {
	returned := false
	defer func() {
		if !returned && again != nil {
			// A panic of New handed to it meanwhile is dropped: this
			// Acquire already raises one.
			_ = p.abandon(again)
		}
	}()
	ok, err = p.checkOut(ctx, r, func() {
		again = p.q.PushFrontDone(done, handoff[T]{ask: ctx})
	})
	returned = true
	return ok, again, err
}

// raise panics with np, the panic of the call to New made for an Acquire,
// once Hooks.OnAcquire is told of it, if e is not nil: that Acquire waited,
// and its wait counts in Stats.WaitDuration as every other.
func (p *Pool[T]) raise(e *AcquireEvent, np *newPanic) {
	if e != nil {
		e.Err = np
		p.cfg.Hooks.OnAcquire(*e)
	}
	panic(np)
}

// abandon takes w, a waiting Acquire whose ctx ended, out of the queue. A
// resource handed to it as ctx ended goes to the next waiter, or back to the
// pool; unless a Close that gave up waiting for the resources out has closed
// it meanwhile. A panic of New handed to it is returned, for the caller to
// raise: dropped, it would be a panic hidden.
func (p *Pool[T]) abandon(w *waitq.Waiter[handoff[T]]) *newPanic {
	p.q.Lock()
	closeIt := false
	h, granted, _ := p.q.Cancel(w)
	if granted && h.panic != nil {
		p.stats.CanceledAcquires++
		p.q.Unlock()
		return h.panic
	}
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
	return nil
}

// TryAcquire returns an idle resource if there is one and nobody waits, and
// never waits or makes one. It skips HealthCheck, which could block.
func (p *Pool[T]) TryAcquire() (*Resource[T], bool) {
	p.mustBeMade()
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
		if !p.expired(r, p.now(), nil) {
			p.acquired(r)
			p.reportAcquire(r, AcquireEvent{Name: p.cfg.Name})
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

// With acquires a resource, calls fn with its value, and releases it. A
// resource that fn found broken, as Config.Broken tells from its value and
// fn's error (by default: an error that wraps ErrBroken or
// driver.ErrBadConn), is destroyed instead, and never goes to the next
// caller; so is one whose fn panicked, since it may be left half-used, and
// the panic goes on. It returns Acquire's error, or fn's.
//
// With panics if fn or ctx is nil.
func (p *Pool[T]) With(ctx context.Context, fn func(T) error) error {
	p.mustBeMade()
	if fn == nil {
		panic("pool: With of a nil fn")
	}
	r, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	broken := true // until fn and Broken have returned and said otherwise
	defer func() {
		if broken {
			r.Destroy()
		} else {
			r.Release()
		}
	}()
	err = fn(r.v)
	broken = p.broken(r.v, err)
	return err
}

// broken applies Config.Broken, or its default.
func (p *Pool[T]) broken(v T, err error) bool {
	if p.cfg.Broken != nil {
		return p.cfg.Broken(v, err)
	}
	return err != nil && (errors.Is(err, ErrBroken) || errors.Is(err, driver.ErrBadConn))
}

// Stats returns a snapshot of the pool.
func (p *Pool[T]) Stats() Stats {
	p.mustBeMade()
	p.q.Lock()
	defer p.q.Unlock()
	s := p.stats
	s.Idle = len(p.idle)
	s.InUse = p.inUse
	s.Constructing = p.making
	s.Closing = p.closing
	s.Total = p.totalLocked()
	s.Waiting = p.q.Len()
	s.WaitDuration = time.Duration(p.waitNs.Load())
	return s
}
