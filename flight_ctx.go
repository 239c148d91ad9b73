package ctxsync

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A flightCtx is the ctx a Flight's fn runs under: the values of the ctx of
// the caller that started the call, no deadline, and a cancellation of its
// own, by the last caller to leave or when fn returns.
//
// It is what context.WithCancel(context.WithoutCancel(ctx)) gives, in one
// small allocation instead of three (the two contexts and the CancelFunc),
// and without WithCancel's propagateCancel: at a new key per call, with an
// fn that returns at once, those were a large part of Do's cost. It is made
// for each call, never reused, since fn may keep it after the call. Its Done
// channel is made only when asked for, as the standard library's is, so an
// fn that never selects on it costs no channel.
//
// It has an AfterFunc method, which the context package uses for the
// contexts derived from it (a WithTimeout in fn): without it, each would cost
// a goroutine that waits for this one to end.
type flightCtx struct {
	// parent gives the values. Value never asks it for the key by which
	// context.Cause finds a cancellation's cause (see Value).
	parent context.Context

	done  atomic.Value  // chan struct{}, made by the first Done
	state atomic.Uint32 // flightLive, then flightCancelling while cancel closes done, then flightCancelled

	mu     sync.Mutex                // guards the making of done, cancel, and afters
	afters map[*flightAfter]struct{} // guarded by mu: AfterFunc's, until cancel runs them
}

// The states of a flightCtx. cancel moves it on under mu, and closes done
// between the two moves: so a goroutine that sees done closed finds the
// state moved on (Err is not nil once Done is closed), and Err, which finds
// it cancelling, waits for cancel's lock before it answers (Err is nil until
// Done is closed). The context package's cancelCtx keeps both promises the
// same way, waiting for the channel rather than a lock: a receive from
// done, which may belong to a testing/synctest bubble, would end the
// program in a goroutine outside it.
const (
	flightLive uint32 = iota
	flightCancelling
	flightCancelled
)

// A flightAfter is one AfterFunc registration; its address is its identity.
type flightAfter struct{ f func() }

// Deadline reports no deadline: the call's callers each have their own, and
// the call must not end with the first caller's.
func (c *flightCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns a channel closed when the call's ctx is cancelled.
func (c *flightCtx) Done() <-chan struct{} {
	if d := c.done.Load(); d != nil {
		return d.(chan struct{})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.done.Load(); d != nil {
		return d.(chan struct{})
	}
	if c.state.Load() != flightLive {
		// Asked for first after cancel: the package's closed channel, as
		// the context package does. One made here would belong to the
		// testing/synctest bubble of the goroutine that asked, and a
		// receive from it in another bubble or outside one would end the
		// program; closedChan, made as the package starts, belongs to
		// none.
		c.done.Store(closedChan)
		return closedChan
	}
	d := make(chan struct{})
	c.done.Store(d)
	return d
}

// closedChan is a closed channel: the Done channel of a flightCtx asked for it
// only once cancelled, and what a Lock or Condition giving back a waiter that
// will not wait selects on, to take a grant already made without waiting (see
// Lock.giveUp). It is made as the package is initialized, outside every
// testing/synctest bubble, so any goroutine may receive from it.
var closedChan = func() chan struct{} {
	d := make(chan struct{})
	close(d)
	return d
}()

// Err returns context.Canceled once the call's ctx is cancelled.
func (c *flightCtx) Err() error {
	switch c.state.Load() {
	case flightLive:
		return nil
	case flightCancelling:
		// cancel is closing done, with mu held: once it lets go, done
		// is closed (see flightCancelling).
		c.mu.Lock()
		c.mu.Unlock()
	}
	return context.Canceled
}

// Value returns the value of the first caller's ctx for key, as
// context.WithoutCancel's ctx would.
//
// WithoutCancel hides one key, the unexported one by which context.Cause
// looks for a cancellation (its type is *int): asked for it, the first
// caller's ctx would answer with its own cancellation, and Cause of this ctx
// would report the first caller's cause, even while the call goes on. So a
// key of type *int goes through WithoutCancel, which hides it; every other
// key goes straight to the first caller's ctx, without the allocation that
// wrapping it costs.
func (c *flightCtx) Value(key any) any {
	if _, ok := key.(*int); ok {
		return context.WithoutCancel(c.parent).Value(key)
	}
	return c.parent.Value(key)
}

// String names the ctx for printing, as the context package's contexts do;
// printing its fields would race with the goroutines that change them.
func (c *flightCtx) String() string { return "ctxsync.Flight call context" }

// AfterFunc arranges for f to run once the ctx is cancelled, in the
// goroutine that cancels it (see cancel), or at once, in a goroutine of its
// own, if it is; stop cancels that, and reports whether it did. The context
// package calls it for a ctx derived from this one (see flightCtx).
func (c *flightCtx) AfterFunc(f func()) (stop func() bool) {
	a := &flightAfter{f: f}
	c.mu.Lock()
	if c.state.Load() != flightLive {
		c.mu.Unlock()
		// In a goroutine of its own even now: the context package calls
		// AfterFunc with a lock held that f takes.
		go f()
		return func() bool { return false }
	}
	if c.afters == nil {
		c.afters = make(map[*flightAfter]struct{})
	}
	c.afters[a] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.afters[a]
		delete(c.afters, a)
		return ok
	}
}

// cancel cancels the ctx, once; later calls do nothing. The functions
// registered by AfterFunc run after the lock is released, in cancel's
// goroutine, before it returns: so a ctx derived from this one is done once
// cancel returns, as a child of a context.WithCancel ctx is once its cancel
// returns (a Do that has fn's result finds what fn derived done). They are
// the context package's, which cancel a derived ctx and take none of our
// locks; context.AfterFunc's, registered for a user's function, starts
// that function in a goroutine of its own.
func (c *flightCtx) cancel() {
	c.mu.Lock()
	if c.state.Load() != flightLive {
		c.mu.Unlock()
		return
	}
	c.state.Store(flightCancelling)
	if d := c.done.Load(); d != nil {
		close(d.(chan struct{}))
	}
	c.state.Store(flightCancelled)
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	for a := range afters {
		a.f()
	}
}
