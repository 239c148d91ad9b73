package pool

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
	"github.com/ctxsync/ctxsync/internal/nocopy"
)

// A Resource is one resource of a Pool, acquired. The pool keeps track of it
// by its address: hold it by the pointer Acquire returns, never copy it.
//
// It is given back exactly once, by Release or by Destroy, from any
// goroutine: the one that acquired it may hand it to another, which gives it
// back. Value and CreatedAt may be called from any goroutine until then; the
// value itself is the holder's to guard. After Release or Destroy the
// Resource is the pool's again: do not touch it, nor keep its value.
//
// The zero Resource is not usable: it is not from a pool, so Release and
// Destroy panic, and its Value is the zero T.
type Resource[T any] struct {
	_        nocopy.NoCopy
	p        *Pool[T]
	v        T
	created  int64 // on clock
	expires  int64 // on clock; 0 for never
	lastUsed int64 // on clock, when the pool times releases
	state    resState
	// unchecked is set, under the pool's lock, while r is owed the
	// HealthCheck at checkout that an Acquire began and could not finish
	// (see Pool.giveBack): the waiter it is handed to runs it.
	unchecked bool

	leak      *time.Timer // Config.LeakThreshold's report, while acquired
	closedFor CloseReason // why the pool closed it, for Hooks.OnClose
}

// resState is where a Resource is.
type resState int

const (
	stateIdle    resState = iota // in the pool
	stateInUse                   // acquired
	stateChecked                 // out of the pool for a health check, an Acquire's or the sweep's
	stateClosed                  // closed; a late Release or Destroy is ignored if closed for Pool.Close
)

// Value returns the resource. The zero Resource's is the zero T.
func (r *Resource[T]) Value() T {
	if r == nil {
		panic("pool: Value of a nil Resource")
	}
	return r.v
}

// CreatedAt returns when the resource was made.
func (r *Resource[T]) CreatedAt() time.Time {
	if r == nil {
		panic("pool: CreatedAt of a nil Resource")
	}
	return clock.Time(r.created)
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
// Release panics if r is not acquired: released or destroyed already, say,
// or not from Acquire. A panic of Config.Close, which Release may call,
// reaches the caller once r's place in the pool is free.
func (r *Resource[T]) Release() {
	if r == nil || r.p == nil {
		panic("pool: Release of a Resource not from Acquire")
	}
	p := r.p
	now := p.now()
	p.q.Lock()
	if !r.endUseLocked("Release") {
		p.q.Unlock()
		return
	}
	if p.closed {
		p.closeLocked(r, ClosedPool)
	} else if r.expires != 0 && now >= r.expires {
		p.closeLocked(r, ClosedLifetime)
		p.fillLocked()
	} else {
		r.lastUsed = now
		r.unchecked = false // its holder has just used it
		if !p.releaseLocked(r) {
			p.q.Unlock()
			if h := p.cfg.Hooks.OnRelease; h != nil {
				h()
			}
			return
		}
	}
	p.q.Unlock()
	p.closeValue(r)
}

// Destroy closes r instead of giving it back, for a resource that is broken;
// its place in the pool frees. After Close has closed r, Destroy does nothing.
//
// Destroy panics if r is not acquired: released or destroyed already, say,
// or not from Acquire. A panic of Config.Close reaches the caller once r's
// place in the pool is free.
func (r *Resource[T]) Destroy() {
	if r == nil || r.p == nil {
		panic("pool: Destroy of a Resource not from Acquire")
	}
	p := r.p
	p.q.Lock()
	if !r.endUseLocked("Destroy") {
		p.q.Unlock()
		return
	}
	p.closeLocked(r, ClosedDestroy)
	p.fillLocked()
	p.q.Unlock()
	p.closeValue(r)
}

// endUseLocked checks that r is acquired, and stops its leak report. It
// returns false if r was closed for the pool's Close already. p.q must be
// locked.
func (r *Resource[T]) endUseLocked(fn string) bool {
	switch r.state {
	case stateInUse:
	case stateClosed:
		// Closed for the pool's Close, by a Close that gave up waiting
		// for r or by its holder's Release since: a late give-back is
		// ignored, as Close promises. Closed by its holder otherwise
		// (Destroy, a Release past MaxLifetime): given back already.
		if r.closedFor == ClosedPool {
			return false
		}
		r.p.q.Unlock()
		panic("pool: " + fn + " of a resource not acquired (released already?)")
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
		p.closeLocked(r, ClosedPool)
		return true
	}
	if w := p.q.Front(); w != nil {
		p.stats.AcquireCount++
		r.state = stateInUse // from a background check, it was stateChecked
		p.q.Grant(w, handoff[T]{r: r, check: r.unchecked})
		return false
	}
	r.state = stateIdle
	p.inUse--
	p.idle = append(p.idle, r)
	return false
}

// closeLocked takes r, acquired, out of the pool, for reason; the caller
// closes its value once unlocked, with closeValue. p.q must be locked.
func (p *Pool[T]) closeLocked(r *Resource[T], reason CloseReason) {
	p.inUse--
	p.retireLocked(r, reason)
}

// retireLocked takes r, no longer counted as idle or in use, out of the pool.
// It counts against MaxSize until closeValue has closed it, so that the
// backend never sees more than MaxSize at once. p.q must be locked.
func (p *Pool[T]) retireLocked(r *Resource[T], reason CloseReason) {
	if r.leak != nil {
		r.leak.Stop()
		r.leak = nil
	}
	r.state = stateClosed
	delete(p.live, r)
	p.closing++
	p.stats.count(reason)
	r.closedFor = reason
}

// closeValue calls Config.Close on the value of r, retired, frees its place,
// then tells Hooks.OnClose: in a defer, so that a Close that panics frees it
// too before the panic goes on (and counts as a failed Close). The lock must
// not be held.
func (p *Pool[T]) closeValue(r *Resource[T]) {
	if h := p.cfg.Hooks.OnClose; h != nil {
		defer h(r.closedFor)
	}
	p.closeQuietly(r)
}

// closeQuietly is closeValue without the hook.
func (p *Pool[T]) closeQuietly(r *Resource[T]) {
	failed := p.cfg.Close != nil
	defer func() {
		p.q.Lock()
		p.closing--
		if failed {
			p.stats.CloseErrors++
		}
		p.fillLocked()
		p.refillLocked()
		p.drainedLocked()
		p.q.Unlock()
	}()
	if p.cfg.Close != nil {
		failed = p.cfg.Close(r.v) != nil
	}
}

// closeValues closes the values of rs, retired, then tells Hooks.OnClose of
// each. If Config.Close panics on one, the others are still closed, their
// places freed, before the panic goes on: a pool left with places held by
// values nobody will close would make its Close wait for ever. The hook is
// told once every place is free, so that a Close it calls does not wait for
// the rest of rs, which only this goroutine would close. The lock must not
// be held.
func (p *Pool[T]) closeValues(rs []*Resource[T]) {
	if p.cfg.Hooks.OnClose != nil {
		defer p.tellClosed(rs)
	}
	p.closeAll(rs)
}

// closeAll is closeValues without the hook.
func (p *Pool[T]) closeAll(rs []*Resource[T]) {
	i := 0
	defer func() {
		if i < len(rs) { // rs[i] panicked
			p.closeAll(rs[i+1:])
		}
	}()
	for ; i < len(rs); i++ {
		p.closeQuietly(rs[i])
	}
}

// tellClosed tells Hooks.OnClose of each of rs, closed: all of them, even if
// the hook panics on one, so that none goes untold.
func (p *Pool[T]) tellClosed(rs []*Resource[T]) {
	i := 0
	defer func() {
		if i < len(rs) { // the hook panicked on rs[i]
			p.tellClosed(rs[i+1:])
		}
	}()
	for ; i < len(rs); i++ {
		p.cfg.Hooks.OnClose(rs[i].closedFor)
	}
}
