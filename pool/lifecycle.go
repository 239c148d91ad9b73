package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/internal/clock"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// now reads the clock if a feature needs the time of checkouts and
// releases, and returns 0 otherwise: a clock read costs more than the rest of
// an Acquire.
func (p *Pool[T]) now() int64 {
	if !p.timed {
		return 0
	}
	return clock.Now()
}

// expired closes r and reports true if it has outlived MaxLifetime or
// MaxIdleTime. r is out of the pool, acquired.
func (p *Pool[T]) expired(r *Resource[T], now int64, requeue func()) bool {
	reason := p.expiry(r, now)
	if reason == 0 {
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
	if requeue != nil {
		requeue() // before fillLocked: see checkOut
	}
	p.fillLocked()
	p.q.Unlock()
	p.closeValue(r)
	return true
}

// expiry returns why r is to be closed if it has expired at now, or 0.
func (p *Pool[T]) expiry(r *Resource[T], now int64) CloseReason {
	switch {
	case !p.timed:
		return 0
	case r.expires != 0 && (now >= r.expires || r.created > now):
		return ClosedLifetime
	case p.cfg.MaxIdleTime > 0 && idleFor(r, now) >= int64(p.cfg.MaxIdleTime):
		return ClosedIdle
	}
	return 0
}

// idleFor returns how long r has been idle at now. Kept on another clock (r
// was released outside a testing/synctest bubble and now is read inside one,
// whose clock starts in 2000; or in another bubble, whose clock started at
// the same instant, at a later virtual time), its release may seem in the
// future: then its idle time is unknown, and taken as forever, so that it is
// checked rather than trusted. On one clock a release never seems so: every
// now compared here is read after the lock that put r back was released
// (see sweep and takeForCheck), and so after the release's own read.
func idleFor[T any](r *Resource[T], now int64) int64 {
	if r.lastUsed > now {
		return math.MaxInt64
	}
	return now - r.lastUsed
}

// lifetimeEnd returns when a resource made at created, which may live for
// life nanoseconds, expires: saturated at the clock's end rather than
// wrapped, for a MaxLifetime near math.MaxInt64.
func lifetimeEnd(created int64, life float64) int64 {
	if life >= 1<<63 {
		return math.MaxInt64
	}
	d := int64(life)
	if created > math.MaxInt64-d {
		return math.MaxInt64
	}
	return created + d
}

// checkOut vets an idle resource just taken: expired, or failing its health
// check, it is closed and checkOut returns false. If ctx ends during the
// check, the resource goes back, to the next waiter or the idle ones, and
// checkOut returns ctx.Err(), whatever the check found.
//
// requeue, if not nil, runs with the lock held as a resource that failed is
// closed, before a replacement is asked for: a waiter that was handed r owed
// its check queues again there, at the head, so that the replacement is its
// (see Pool.acquire).
func (p *Pool[T]) checkOut(ctx context.Context, r *Resource[T], requeue func()) (bool, error) {
	if !p.timed {
		return true, nil
	}
	now := clock.Now()
	if p.expired(r, now, requeue) {
		return false, nil
	}
	if p.cfg.HealthCheck == nil || (p.cfg.HealthCheckSkip > 0 && idleFor(r, now) < int64(p.cfg.HealthCheckSkip)) {
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
	// The check's ctx is made from the caller's, and its making and its
	// cancel run the caller's code (Deadline, Done, Value), which may
	// panic: that is no failure of the check, and r goes back, as when
	// ctx ends. Only a panic of HealthCheck itself closes r.
	cctx, cancel := p.checkCtx(ctx, r)
	err := p.runCheck(cctx, cancel, r)
	cerr := p.errAfterCheck(ctx, cancel, r, err) // before the lock: the caller's code
	p.q.Lock()
	switch {
	case p.closed:
		p.stats.AcquireCount--
		p.closeLocked(r, ClosedPool)
		p.q.Unlock()
		if err != nil {
			// Closed for the pool's Close, but failed all the same: told,
			// as every failed check is.
			p.closeFailed(r, err)
		} else {
			p.closeValue(r)
		}
		return false, ErrClosed
	case cerr != nil:
		// The caller gave up, whether or not the resource passed: a
		// resource is never handed to an Acquire whose ctx has ended (a
		// check that does not look at ctx may pass after it ended). A
		// check that failed as ctx ended may have failed for that: the
		// resource is given the benefit of the doubt.
		// It goes back owed its check, which the next taker runs (see
		// Resource.unchecked), unless it passed.
		p.stats.AcquireCount--
		p.stats.CanceledAcquires++
		r.unchecked = err != nil
		closeIt := p.releaseLocked(r)
		p.q.Unlock()
		if closeIt {
			p.closeValue(r)
		}
		return false, cerr
	case err == nil:
		r.state = stateInUse
		r.unchecked = false
		p.q.Unlock()
		return true, nil
	}
	p.stats.AcquireCount--
	p.closeLocked(r, ClosedHealth)
	if requeue != nil {
		requeue() // before fillLocked, which makes the replacement for it
	}
	p.fillLocked()
	p.q.Unlock()
	p.closeFailed(r, err)
	return false, nil
}

// closeFailed closes r, retired, whose check failed with err, then tells
// Hooks.OnHealthCheckFail: even if Config.Close panics. Told before, the hook
// would run while r still held its place, and a Close it called would wait
// for that place, which only its own return frees. A function of its own, so
// that checkOut, on Acquire's path, has no more defers than its compiler
// inlines (open-coded defers).
func (p *Pool[T]) closeFailed(r *Resource[T], err error) {
	if h := p.cfg.Hooks.OnHealthCheckFail; h != nil {
		defer h(err)
	}
	p.closeValue(r)
}

// checkCtx returns the ctx of the check of r at Acquire: the caller's ctx,
// bounded by HealthCheckTimeout. context.WithTimeout calls methods of ctx,
// the caller's code: if one panics, r goes back (see giveBack), its check
// never run. (A function of its own: see closeFailed.)
func (p *Pool[T]) checkCtx(ctx context.Context, r *Resource[T]) (context.Context, context.CancelFunc) {
	made := false
	defer func() {
		if !made {
			p.giveBack(r, true)
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, p.cfg.HealthCheckTimeout)
	made = true
	return cctx, cancel
}

// runCheck runs HealthCheck on the value of r at Acquire, under ctx. A check
// that panics, or calls runtime.Goexit, has not passed: r is closed, then
// cancel called, and the panic goes on. Otherwise cancel is the caller's to
// call: it may run the caller's code (see errAfterCheck).
func (p *Pool[T]) runCheck(ctx context.Context, cancel context.CancelFunc, r *Resource[T]) error {
	checked := false
	defer func() {
		if !checked {
			// After r is closed: it runs the caller's ctx, which may
			// panic too.
			defer cancel()
			p.checkPanicked(r)
		}
	}()
	err := p.cfg.HealthCheck(ctx, r.v)
	checked = true
	return err
}

// errAfterCheck cancels the ctx of the check of r, then returns ctx.Err(),
// once the check is over: checkErr is what it found. Both run the caller's
// code (the cancel looks at the caller's ctx, to leave it): if either
// panics, r goes back, as for a caller whose ctx ended during the check, so
// that the panic goes on to the caller with nothing kept; unless the check
// failed. Then r is closed for it: the check's verdict is known, and
// whether the caller's ctx ended is not (it panicked); given back, a broken
// r would go to the next waiter, which takes what it is handed unchecked.
// (A function of its own: see closeFailed.)
func (p *Pool[T]) errAfterCheck(ctx context.Context, cancel context.CancelFunc, r *Resource[T], checkErr error) error {
	looked := false
	defer func() {
		switch {
		case looked:
		case checkErr != nil:
			p.checkFailed(r, checkErr)
		default:
			p.giveBack(r, false) // it passed
		}
	}()
	cancel()
	err := ctx.Err()
	looked = true
	return err
}

// giveBack hands r, taken for a check at Acquire, to the next waiter or the
// idle ones (or closes it, if the pool is closed), for an Acquire that will
// not have it: its caller's ctx panicked. If owed, the check has not passed
// (it never ran): the next taker runs it. Handed over unchecked, a broken
// resource would reach a waiter as working; idle, its time of last use,
// unchanged, has the next Acquire check it anyway. The lock must not be
// held.
func (p *Pool[T]) giveBack(r *Resource[T], owed bool) {
	p.q.Lock()
	p.stats.AcquireCount--
	r.unchecked = owed
	closeIt := p.releaseLocked(r)
	p.q.Unlock()
	if closeIt {
		p.closeValue(r)
	}
}

// checkPanicked closes r, whose HealthCheck at Acquire panicked: a check
// that does not return has not passed. The panic then goes on to the caller.
func (p *Pool[T]) checkPanicked(r *Resource[T]) {
	p.checkFailed(r, errHealthCheckPanicked)
}

// checkFailed closes r, whose HealthCheck at Acquire failed with err, and
// tells Hooks.OnHealthCheckFail, on a path where the caller's code panics
// (see checkPanicked and errAfterCheck). The lock must not be held.
func (p *Pool[T]) checkFailed(r *Resource[T], err error) {
	p.q.Lock()
	p.stats.AcquireCount--
	if p.closed {
		p.closeLocked(r, ClosedPool)
	} else {
		p.closeLocked(r, ClosedHealth)
		p.fillLocked()
	}
	p.q.Unlock()
	p.closeFailed(r, err)
}

// errHealthCheckPanicked is what Hooks.OnHealthCheckFail is told of a
// HealthCheck that panicked, or called runtime.Goexit (which the deferred
// code that tells it cannot tell apart from a panic it does not recover).
var errHealthCheckPanicked = errors.New("pool: HealthCheck panicked or did not return")

// healthCheck runs Config.HealthCheck on the value of r, for at most
// HealthCheckTimeout, under ctx, the pool's own (the sweep's): its making
// and cancel run no caller's code. The lock must not be held.
func (p *Pool[T]) healthCheck(ctx context.Context, r *Resource[T]) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.HealthCheckTimeout)
	defer cancel()
	return p.cfg.HealthCheck(ctx, r.v)
}

// fillLocked starts making resources for the waiters that no call to New
// under way will serve, while the pool has room, each with the values of the
// ctx of the waiter it is made for (see Config.New), whoever freed the
// place. p.q must be locked.
func (p *Pool[T]) fillLocked() {
	if p.q.Len() <= p.making || p.totalLocked() >= p.cfg.MaxSize || p.closed {
		return // the common case: no queue walk
	}
	// A resource goes to the oldest waiter: the calls under way serve the
	// first p.making of them.
	w := p.q.Front()
	for i := 0; i < p.making && w != nil; i++ {
		w = p.q.Next(w)
	}
	for ; w != nil && p.totalLocked() < p.cfg.MaxSize; w = p.q.Next(w) {
		p.startMaking(w.Val.ask)
	}
}

// totalLocked counts the resources that count against MaxSize. p.q must be
// locked.
func (p *Pool[T]) totalLocked() int { return len(p.idle) + p.inUse + p.making + p.closing }

// startMaking makes a resource in a goroutine of its own, which keeps the
// values of ctx but not its cancellation: the Acquire that asked may give up,
// and the resource still joins the pool. p.q must be locked.
func (p *Pool[T]) startMaking(ctx context.Context) {
	p.making++
	go p.make(context.WithoutCancel(ctx))
}

// make is the goroutine of startMaking: it calls New, which Close cancels,
// and hands the resource to the oldest waiter or to the idle ones, or the
// error to the oldest waiter.
func (p *Pool[T]) make(parent context.Context) {
	ctx, done := p.closable(parent)
	var start int64
	if p.cfg.Hooks.OnCreate != nil {
		start = clock.Now()
	}
	returned := false
	run := running{fn: newFunc}
	defer func() {
		if returned {
			return
		}
		// New panicked, or called runtime.Goexit; or a function of the
		// Breaker's Settings did, before New was called, after it
		// returned, or as it counted New's panic, which a panic of its own
		// then replaces; or Close did, closing what New made (see
		// newValue). run tells which, for the error that names it.
		v := recover() // nil for a Goexit, which goes on by itself
		fn := run.fn
		switch np, ok := v.(*newPanicking); {
		case ok:
			fn, v = newFunc, np.value
		case v == nil && run.exited != "":
			fn = run.exited
		}
		if h := p.cfg.Hooks.OnCreate; h != nil {
			defer h(CreateEvent{Name: p.cfg.Name, Duration: time.Duration(clock.Now() - start), Err: createErr(fn)})
		}
		// Its place frees, and the panic goes where New's error would
		// have gone: to a waiting Acquire, which raises it. With nobody
		// to take it, it goes on here, and ends the program once the pool
		// is whole (see Pool).
		done()
		p.q.Lock()
		p.making--
		p.stats.CreateFailures++
		w := p.errWaiterLocked()
		if w != nil {
			h := handoff[T]{err: exitErr(fn)}
			if v != nil {
				h = handoff[T]{panic: &newPanic{fn: fn, value: v, stack: debug.Stack()}}
			}
			p.q.Grant(w, h)
		}
		p.fillLocked()
		p.drainedLocked()
		p.q.Unlock()
		if w == nil && v != nil {
			panic(v)
		}
	}()
	v, refused, err := p.newValue(ctx, &run)
	returned = true
	done()
	if h := p.cfg.Hooks.OnCreate; h != nil {
		// Told once the resource is in the pool, or its error with the
		// waiter it went to, and the call's place is free: the deferred
		// call runs after the unlocks, so that a hook may call Close.
		defer h(CreateEvent{Name: p.cfg.Name, Duration: time.Duration(clock.Now() - start), Err: err, Refused: refused})
	}

	p.q.Lock()
	p.making--
	if err != nil {
		p.stats.CreateFailures++
		if w := p.errWaiterLocked(); w != nil {
			p.q.Grant(w, handoff[T]{err: err})
		}
		p.fillLocked()
		p.drainedLocked()
		p.q.Unlock()
		return
	}
	r := &Resource[T]{p: p, v: v, state: stateInUse, created: clock.Now()}
	r.lastUsed = r.created
	if p.cfg.MaxLifetime > 0 {
		jitter := p.cfg.MaxLifetimeJitter * rand.Float64()
		r.expires = lifetimeEnd(r.created, float64(p.cfg.MaxLifetime)*(1-jitter))
	}
	p.stats.Created++
	p.live[r] = struct{}{}
	p.inUse++
	closeIt := p.releaseLocked(r)
	// Handed to a waiter, a resource the top-up made for MinIdle leaves
	// the idle ones short: look again now, not at the next period.
	p.refillLocked()
	p.q.Unlock()
	if closeIt {
		p.closeValue(r)
	}
}

// closeOrphan closes v, a value New made that no resource holds (see
// newValue), counting a Close that fails, or panics, in Stats.CloseErrors,
// as closeQuietly does. It runs while a function of the Breaker's Settings
// panics, or calls runtime.Goexit: that came first, and is what the caller
// must see. A panic of Close, second, is counted and dropped, and the first
// goes on. A Goexit of Close cannot be stopped: run notes it, so that the
// error the Acquire gets names Close. The lock must not be held.
func (p *Pool[T]) closeOrphan(v T, run *running) {
	if p.cfg.Close == nil {
		return
	}
	failed, returned := true, false
	defer func() {
		if !returned && recover() == nil {
			run.exited = closeFunc // Close called runtime.Goexit
		}
		if failed {
			p.q.Lock()
			p.stats.CloseErrors++
			p.q.Unlock()
		}
	}()
	failed = p.cfg.Close(v) != nil
	returned = true
}

// running names the functions of the user's that run in the goroutine of a
// call to New (see make): fn is the one whose panic would be the one in
// flight, exited the one that called runtime.Goexit, if one did.
type running struct {
	fn, exited string
}

// newPanicking is what a panic of New goes on with through the Breaker's
// Execute, whose functions (OnCall...) may panic in their turn as they count
// it: make tells New's panic by it, and raises New's value.
type newPanicking struct{ value any }

// String is the value's, as a program that a panic ends prints it for each
// panic of the chain.
func (p *newPanicking) String() string { return fmt.Sprint(p.value) }

// The functions named in the errors of a call to New that did not return.
const (
	newFunc   = "Config.New"
	closeFunc = "Config.Close"
)

// breakerFuncs names, in errors, the functions of Config.Breaker's Settings
// that run in the goroutine of a call to New: OnCall, IsFailure, IsIgnored,
// OnStateChange.
const breakerFuncs = "a function of Config.Breaker's Settings"

// errNewPanicked is what Hooks.OnCreate is told of a call to New that
// panicked, or did not return.
var errNewPanicked = errors.New("pool: Config.New panicked or did not return")

// errNewExited is the error of a call to New that ended its goroutine with
// runtime.Goexit (a t.FailNow in a test's New, say) instead of returning.
var errNewExited = errors.New("pool: Config.New did not return (runtime.Goexit)")

// errBreakerPanicked and errBreakerExited are errNewPanicked and
// errNewExited for a function of Config.Breaker's Settings that panicked,
// or called runtime.Goexit, in the goroutine of a call to New, before New
// was called, after it returned, or as it counted New's panic.
var (
	errBreakerPanicked = errors.New("pool: " + breakerFuncs + " panicked or did not return")
	errBreakerExited   = errors.New("pool: " + breakerFuncs + " did not return (runtime.Goexit)")
)

// errCloseExited is the error of a call to New whose value Config.Close,
// closing it as a function of the Breaker's Settings panicked (see
// newValue), ended the goroutine with runtime.Goexit.
var errCloseExited = errors.New("pool: " + closeFunc + " did not return (runtime.Goexit)")

// createErr is what Hooks.OnCreate is told of a call to New that did not
// return, fn the function that panicked or called runtime.Goexit: a Close
// of the value New made runs only as a function of the Breaker's Settings
// has failed the call.
func createErr(fn string) error {
	if fn == newFunc {
		return errNewPanicked
	}
	return errBreakerPanicked
}

// exitErr is the error of a call to New that did not return as fn called
// runtime.Goexit.
func exitErr(fn string) error {
	switch fn {
	case newFunc:
		return errNewExited
	case closeFunc:
		return errCloseExited
	}
	return errBreakerExited
}

// errWaiterLocked returns the waiter that the failure of a call to New goes
// to, or nil: the oldest, if no other call to New under way will serve it,
// so that waiters fail fast, rather than hang, while the backend is down.
// The place the call held is free again, and fillLocked makes one for the
// waiters behind it, which would otherwise wait for a Release that may never
// come: each gets a resource, or the error of the call made for it. p.q must
// be locked, and p.making no longer count the failed call.
func (p *Pool[T]) errWaiterLocked() *waitq.Waiter[handoff[T]] {
	if w := p.q.Front(); w != nil && p.q.Len() > p.making {
		return w
	}
	return nil
}

// newValue calls Config.New, through the Breaker if there is one. run names
// the function of the user's that runs: if newValue panics, or calls
// runtime.Goexit, it tells make whether New did, a function of the
// Breaker's Settings, or Close.
//
// The breaker runs code of the user's after New has returned (Settings'
// OnCall, IsFailure, OnStateChange): if that panics, or calls
// runtime.Goexit, the value New made would reach nobody, and what it holds
// (a connection) would stay open. It is closed with Config.Close, while the
// call still counts as making (so that the backend never sees more than
// MaxSize), and the panic goes on, as New's own would (see make): a panic
// of that Close is counted in Stats.CloseErrors, not raised in its place.
// The breaker runs that code too as it counts a panic of New, or a Goexit:
// New's panic goes through it as a *newPanicking, so that make tells it
// from a panic of the Breaker's functions that replaced it.
func (p *Pool[T]) newValue(ctx context.Context, run *running) (v T, refused bool, err error) {
	if p.cfg.Breaker != nil {
		called, made, returned := false, false, false
		var madeV T
		defer func() {
			if made && !returned {
				p.closeOrphan(madeV, run)
			}
		}()
		run.fn = breakerFuncs
		v, err = breaker.Do(ctx, p.cfg.Breaker, func(ctx context.Context) (T, error) {
			called, run.fn = true, newFunc
			newReturned := false
			defer func() {
				run.fn = breakerFuncs // from here on, the breaker's code runs
				if newReturned {
					return
				}
				if v := recover(); v != nil {
					panic(&newPanicking{value: v})
				}
				run.exited = newFunc // a Goexit, which goes on
			}()
			v, err := p.cfg.New(ctx)
			newReturned = true
			if err == nil {
				madeV, made = v, true
			}
			return v, err
		})
		returned = true
		return v, !called && err != nil, err
	}
	v, err = p.cfg.New(ctx)
	return v, false, err
}

// refillLocked wakes the maintainer if the idle resources, with those being
// made, are below MinIdle: a place just freed (a Destroy, a Release past
// MaxLifetime, a failed check) may be the one the top-up lacked when an
// Acquire took the idle ones below MinIdle, with the pool full; and a
// resource the top-up made may have gone to a waiter. Without this the
// top-up would wait for the next HealthCheckPeriod. p.q must be locked.
func (p *Pool[T]) refillLocked() {
	if p.cfg.MinIdle > 0 && !p.closed && len(p.idle)+p.making < p.cfg.MinIdle {
		p.wake()
	}
}

// wake makes the maintainer look early, to top MinIdle up.
func (p *Pool[T]) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// maintain is the pool's goroutine: every HealthCheckPeriod it sweeps the
// idle resources and tops them up, and when it is woken (Acquire took the
// idle resources below MinIdle, a close freed a place) it tops them up.
func (p *Pool[T]) maintain() {
	quit := false
	defer func() {
		if !quit && !p.isClosed() {
			// User code the sweep ran (a HealthCheck, Config.Close)
			// called runtime.Goexit, which ends this goroutine: the
			// sweep's defers left the pool whole, and a new goroutine
			// carries on. (In a panic, which ends the program, the new
			// goroutine is of no matter.)
			go p.maintain()
			return
		}
		close(p.stopped)
		p.q.Lock()
		p.ended = true
		p.q.Unlock()
	}()
	ctx, done := p.closable(context.Background()) // for the health checks
	defer done()
	t := time.NewTicker(p.cfg.HealthCheckPeriod)
	defer t.Stop()
	for sweep := true; ; {
		if sweep {
			p.sweep(ctx)
		} else {
			p.topUp()
		}
		select {
		case <-p.quit:
			quit = true
			return
		case <-t.C:
			sweep = true
		case <-p.kick:
			// A wake-up asks for MinIdle only: a whole sweep here would
			// check the idle resources at every Destroy, or every
			// Acquire that dips below MinIdle, not every
			// HealthCheckPeriod.
			sweep = false
		}
	}
}

// sweep closes the idle resources that have expired, health-checks those not
// used lately, and makes resources until MinIdle are idle or being made.
func (p *Pool[T]) sweep(ctx context.Context) {
	var expired, due []*Resource[T]
	p.q.Lock()
	if p.closed {
		p.q.Unlock()
		return
	}
	// Read under the lock, after every release of the idle resources: a
	// time read before it could precede one, whose resource would seem
	// released in the future, as one from another clock (see idleFor).
	now := p.now()
	// sweeping is set only while the sweep runs user code (Config.Close,
	// HealthCheck, the hooks), or has taken what it will run it on: Close
	// must not wait for that without bound. Set for a sweep with nothing
	// to close or check, it made a Close with a done ctx that came then
	// return ctx.Err(), though nothing was left to wait for, at random.
	// (Cleared in a defer too, for a runtime.Goexit in user code.)
	defer p.userCodeDone()
	keep := p.idle[:0]
	for _, r := range p.idle {
		if reason := p.expiry(r, now); reason != 0 {
			p.retireLocked(r, reason)
			expired = append(expired, r)
			continue
		}
		if p.cfg.HealthCheck != nil && idleFor(r, now) >= int64(p.cfg.HealthCheckSkip) {
			// Due for a check, but left idle until its turn: taken out
			// all at once, the resources would wait out each other's
			// checks (a hung backend's, up to HealthCheckTimeout each)
			// while Acquires, finding none idle and the pool full,
			// waited with them.
			due = append(due, r)
		}
		keep = append(keep, r)
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.fillLocked()
	p.sweeping = len(expired) > 0
	p.q.Unlock()

	if len(expired) > 0 {
		p.closeValues(expired)
		p.userCodeDone()
	}
	for _, r := range due {
		if !p.takeForCheck(r) {
			if p.isClosed() {
				break // no more checks on values about to be closed
			}
			continue
		}
		p.sweepCheck(ctx, r)
		p.userCodeDone()
	}

	p.topUp()
}

// userCodeDone tells Close that the sweep runs no user code now, and will
// run none before it sees the pool closed (see takeForCheck).
func (p *Pool[T]) userCodeDone() {
	p.q.Lock()
	p.sweeping = false
	p.q.Unlock()
}

// topUp makes resources until MinIdle are idle or being made, or the pool
// is full.
func (p *Pool[T]) topUp() {
	p.q.Lock()
	defer p.q.Unlock()
	// This top-up answers the wake-ups sent meanwhile, by the closes of
	// a sweep just made among others: left, one would top up again at once
	// for nothing.
	select {
	case <-p.kick:
	default:
	}
	for !p.closed && len(p.idle)+p.making < p.cfg.MinIdle && p.totalLocked() < p.cfg.MaxSize {
		p.startMaking(context.Background())
	}
}

// sweepCheck runs the background health check of r, and gives r back or
// closes it: in a defer, so that a check that panics counts as failed.
func (p *Pool[T]) sweepCheck(ctx context.Context, r *Resource[T]) {
	failed := true
	err := errHealthCheckPanicked
	defer func() {
		if cerr := ctx.Err(); failed && cerr != nil && errors.Is(err, cerr) {
			// Only Close cancels ctx, the pool's own: a check that
			// failed with that cancellation failed for it, not for the
			// resource. Its resource goes back, and so is closed for
			// the pool's Close, not told as a failed check. (A check
			// that failed otherwise meanwhile is told, as every one.)
			failed = false
		}
		p.q.Lock()
		closeIt := true
		if failed {
			p.closeLocked(r, ClosedHealth)
			p.fillLocked()
		} else {
			r.unchecked = err != nil // passed, or cut short by Close
			closeIt = p.releaseLocked(r)
		}
		p.q.Unlock()
		switch {
		case failed:
			p.closeFailed(r, err)
		case closeIt:
			p.closeValue(r)
		}
	}()
	err = p.healthCheck(ctx, r)
	failed = err != nil
}

// isClosed tells whether Close has been called.
func (p *Pool[T]) isClosed() bool {
	p.q.Lock()
	defer p.q.Unlock()
	return p.closed
}

// takeForCheck takes r out of the idle resources for the sweep's check, if
// it is still idle, still due (an Acquire may have taken it, and
// used it, or checked it, since the sweep looked), and the pool is open. It
// is then counted as in use, so that MaxSize and Close account for it. Close
// does not take it from the sweep, even when it gives up waiting: the
// check's end hands it back, and it is closed then.
func (p *Pool[T]) takeForCheck(r *Resource[T]) bool {
	p.q.Lock()
	defer p.q.Unlock()
	// The sweep's time is stale by the checks made since: read again,
	// under the lock (see idleFor).
	if p.closed || r.state != stateIdle || idleFor(r, p.now()) < int64(p.cfg.HealthCheckSkip) {
		return false
	}
	// The resources due are the least recently used: near the front.
	i := slices.Index(p.idle, r)
	if i < 0 {
		panic("ctxsync: bug: idle resource not among the idle ones")
	}
	p.idle = slices.Delete(p.idle, i, i+1)
	r.state = stateChecked
	p.inUse++
	p.sweeping = true // its check is user code (see sweep)
	return true
}
