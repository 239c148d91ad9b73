package pool

import (
	"context"

	"github.com/ctxsync/ctxsync/internal/waitq"
)

// Close closes the pool: Acquire fails with ErrClosed from now on, waiting
// Acquires are released with ErrClosed, and idle resources are closed. Close
// then waits for the resources out to come back (each is closed as it is
// released) and for calls to New under way, which it cancels, until ctx is
// done; then it closes the resources still out, whose later Release or Destroy
// does nothing, and returns ctx.Err(). A resource under a health check is
// left to the check, whose end closes it: Config.Close never runs on a value
// while Config.HealthCheck does. Close returns once the pool's background
// goroutine has ended and every call to New has returned, or ctx has (with
// ctx.Err()): New should honour its context. The goroutine of a call to New
// may still be telling Hooks.OnClose and Hooks.OnCreate of it then: they are
// told once its place is free, so that they may call Close (see Hooks), and
// Close does not wait for them. Closing a closed pool waits again, as the
// first Close does.
//
// A Close called from a function of Config that the pool is running (a
// HealthCheck, a Config.Close or a New, run for a caller or by the pool's own
// goroutine), or from a hook that holds something of the pool (see Hooks),
// waits for that very function to return, as it waits for any
// resource out or call under way, and so returns only when ctx ends, with
// ctx.Err(): give it a ctx that ends, or call Close in a goroutine of its
// own. The pool is closed at once all the same, and what Close could not
// wait for is closed as it ends.
//
// Close panics if ctx is nil, or with the panic of Config.Close, once every
// other resource it had to close is closed.
func (p *Pool[T]) Close(ctx context.Context) error {
	p.mustBeMade()
	if ctx == nil {
		panic("pool: nil Context")
	}
	p.q.Lock()
	var idle []*Resource[T]
	var cancels []context.CancelFunc
	if !p.closed {
		p.closed = true
		if p.quit != nil {
			close(p.quit)
		}
		for _, c := range p.cancels {
			cancels = append(cancels, c)
		}
		clear(p.cancels)
		for w := p.q.Front(); w != nil; w = p.q.Front() {
			p.q.Grant(w, handoff[T]{err: ErrClosed})
		}
		idle = p.idle
		p.idle = nil
		for _, r := range idle {
			p.retireLocked(r, ClosedPool)
		}
	}
	p.q.Unlock()
	for _, c := range cancels {
		c()
	}
	p.closeValues(idle)
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	p.q.Lock()
	var w *waitq.Waiter[struct{}]
	if p.inUse > 0 || p.making > 0 || p.closing > 0 {
		w = p.closers.Push(struct{}{})
	}
	p.q.Unlock()

	var err error
	if w != nil {
		if _, ok := p.closers.Wait(done, w); !ok {
			p.q.Lock()
			_, drained, _ := p.closers.Cancel(w)
			var out []*Resource[T]
			for r := range p.live {
				if r.state == stateInUse {
					out = append(out, r)
					p.closeLocked(r, ClosedPool)
				}
			}
			p.q.Unlock()
			p.closeValues(out)
			if !drained {
				err = waitq.DoneErr(ctx) // read unlocked: the caller's code
			}
		}
	}
	if p.stopped == nil {
		return err
	}
	// A maintainer whose sweep runs no user code now runs none before it
	// sees the pool closed and ends: wait for it, even with ctx done, so
	// that a Close with nothing left to wait for returns nil. One whose
	// sweep runs user code, only until ctx ends, as every wait here: Close
	// may be running in the pool's goroutine itself, from a background
	// HealthCheck or a Config.Close that the sweep runs, and that
	// goroutine ends only once the function that called Close has
	// returned. A closed stopped wins over a done ctx.
	//
	// Once the maintainer is known to have ended, stopped is not looked at:
	// made by New inside a synctest bubble, it belongs to the bubble, and
	// a Close again after the bubble has ended (a deferred one, say) would
	// be refused by the runtime, which ends the program, for a wait that
	// has nothing left to wait for.
	p.q.Lock()
	sweeping, ended := p.sweeping, p.ended
	p.q.Unlock()
	if ended {
		return err
	}
	select {
	case <-p.stopped:
	default:
		if !sweeping {
			<-p.stopped
			break
		}
		select {
		case <-p.stopped:
		case <-ctx.Done():
			if err == nil {
				err = waitq.DoneErr(ctx)
			}
		}
	}
	return err
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

// closable returns a ctx derived from parent that Close cancels, canceled
// already if the pool is closed, and the func to call once done with it.
//
// The pool keeps the cancel funcs rather than derive every ctx from one of
// its own: that one's Done channel would belong to the testing/synctest
// bubble of whichever goroutine first asked for it, and a Close from outside
// that bubble (a pool made in a bubble, used after it) would be refused by
// the runtime. Each ctx here belongs to the goroutine that uses it.
func (p *Pool[T]) closable(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	p.q.Lock()
	if p.closed {
		p.q.Unlock()
		cancel()
		return ctx, cancel
	}
	id := p.nextCancel
	p.nextCancel++
	p.cancels[id] = cancel
	p.q.Unlock()
	return ctx, func() {
		p.q.Lock()
		delete(p.cancels, id)
		p.q.Unlock()
		cancel()
	}
}
