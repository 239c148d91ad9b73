package redissync

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync"
)

const errZeroPermit = "redissync: use Semaphore.Acquire; the zero or nil Permit is not usable"

// errReleased is the cause of a Permit's Context after Release.
var errReleased = context.Canceled

// A Permit is one acquisition of a permit of a Semaphore. It renews its lease
// in the background until Release, or until the lease is lost.
//
// A Permit must not be copied (go vet reports one); the zero Permit is not
// usable. Its methods are safe for concurrent use.
type Permit struct {
	s      *Semaphore
	id     string
	token  int64
	lost   ctxsync.Event
	parent context.Context // Acquire's: its values
	done   atomic.Bool     // Release was called
	// The key's use in its Keyed, ended at Release or at the loss of the
	// lease, whichever comes first (unkeyed says it did); nil for a
	// Semaphore's.
	keyed   *keyedSem
	unkeyed atomic.Bool

	// The renewals run on a timer's function, not a goroutine of their own:
	// a permit held for less than a third of its lease (the common case)
	// costs no goroutine, and Release wakes none.
	mu      sync.Mutex
	t       *time.Timer
	stopped bool      // released or lost: no more renewals
	until   time.Time // when the lease can no longer be proven
	next    time.Time // when to renew
	lostAt  time.Time // when the loss was decided: for tests

	// What was proven of the lease when the permit was made, and when its
	// first renewal was due from then: for tests.
	madeLeft, madeFirst time.Duration

	// The Context is made at its first call (most holders never ask), and
	// ended with the permit's cause: nil while it lasts, then ErrLost or
	// errReleased.
	ctx         context.Context
	cancel      context.CancelCauseFunc
	cause       error
	renewCancel context.CancelFunc // ends a renewal under way
}

// newPermit starts the renewals of a permit whose lease is proven until
// until.
func (s *Semaphore) newPermit(ctx context.Context, id string, token int64, until time.Time) *Permit {
	p := &Permit{s: s, id: id, token: token, until: until, parent: ctx, keyed: s.ks}
	// The first renewal comes at a third of the lease, or at half of what is
	// left of it when that is sooner: a permit handed over late (its
	// waiter's message held up) must be renewed before it ends, with as much
	// time to spare for the round trip as a renewal in the steady state has.
	now := time.Now()
	first := max(min(s.lease/3, until.Sub(now)/2), 0)
	p.next = now.Add(first)
	p.madeLeft, p.madeFirst = until.Sub(now), first
	p.mu.Lock()
	p.t = time.AfterFunc(first, p.tick)
	p.mu.Unlock()
	return p
}

// validUntil returns when a lease of d, renewed by a request sent at sent,
// can no longer be proven: the server started it after sent, but its clock
// may run a little faster than ours.
//
// The server counts whole milliseconds and rounds its time down, so a lease
// may end up to a millisecond before sent+d, and Redis is given d cut to whole
// milliseconds: both are taken off, besides the margin for the clocks.
func (s *Semaphore) validUntil(sent time.Time, d time.Duration) time.Time {
	return sent.Add(d.Truncate(time.Millisecond) - time.Millisecond - d/50)
}

func (p *Permit) check() {
	if p == nil || p.s == nil {
		panic(errZeroPermit)
	}
}

// Token returns the permit's fencing token: a number that Redis gives each
// grant of a permit of the Semaphore's Name, in any process, one more than
// the grant before (see "Fencing tokens" in the package's doc). It is unique
// to this Permit.
//
// For a lock (N = 1), pass it to the resource the permit protects, which
// refuses a token lower than the highest it has seen: a holder that paused
// past its lease is then refused rather than trusted. For a Semaphore of
// N > 1 that check is wrong: its holders overlap, and a lower token may be
// taken up after a higher one, so the resource must not compare them (the
// package's doc says what it can check).
func (p *Permit) Token() int64 {
	p.check()
	return p.token
}

// Lost returns a channel closed the moment the permit's lease can no longer
// be proven: Redis said it ended, or no renewal succeeded before it would
// end. It is not closed by Release.
func (p *Permit) Lost() <-chan struct{} {
	p.check()
	return p.lost.Done()
}

// Context returns a context cancelled when the lease is lost (its cause is
// ErrLost) or the permit released. It carries the values of the ctx given to
// Acquire.
func (p *Permit) Context() context.Context {
	p.check()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx == nil {
		p.ctx, p.cancel = context.WithCancelCause(context.WithoutCancel(p.parent))
		if p.cause != nil {
			p.cancel(p.cause)
		}
	}
	return p.ctx
}

// endLocked ends the permit's Context, and a renewal under way, with cause,
// unless they have ended already; p.mu is held.
func (p *Permit) endLocked(cause error) {
	if p.cause != nil {
		return
	}
	p.cause = cause
	if p.cancel != nil {
		p.cancel(cause)
	}
	if p.renewCancel != nil {
		p.renewCancel()
	}
}

// Release gives the permit back and wakes the waiter next in line. It panics
// if the permit was already released. It returns an error matching ErrLost if
// the lease had ended before, ctx.Err() if ctx ended first, or an error
// matching ErrUnavailable if Redis did not answer within the Timeout. After
// any error the permit is no longer renewed, and frees itself at the end of
// its lease at the latest. So give Release a ctx that has not ended, not one
// that may have ended with the work the permit guarded: with a done ctx it
// gives nothing back, and the next in line waits for the lease to end.
//
// If a client hook panics in Release, the permit is given back, by a round
// trip bounded by the Timeout, before the panic goes on to the caller.
func (p *Permit) Release(ctx context.Context) error {
	p.check()
	if ctx == nil {
		panic("redissync: nil Context") // before any change of the permit
	}
	if p.done.Swap(true) {
		panic("redissync: Release of a Permit already released")
	}
	p.mu.Lock()
	// A lease still proven has not ended on the server either: the script
	// need not read its end. (One lost is not, whatever the clock says.)
	proven := p.cause == nil && time.Now().Before(p.until)
	p.stopped = true
	p.t.Stop()
	p.endLocked(errReleased)
	p.mu.Unlock()
	s := p.s
	// A client hook (the user's code) may panic before the script is sent,
	// or after it ran. Either way the panic goes on to the caller with
	// nothing held: the permit, no longer renewed, would otherwise be held
	// by nobody for the rest of its lease, and its key kept in the Keyed.
	// The take-back runs the release again; after one that ran, it finds
	// nothing to give.
	returned := false
	defer func() {
		if !returned {
			s.takeBackPanicked(p.id)
			p.unkey()
		}
	}()
	held, err := s.releaseProven(ctx, p.id, proven)
	returned = true
	p.unkey()
	if err != nil {
		return err
	}
	if !held {
		return ErrLost
	}
	return nil
}

// loseLocked signals the loss of the lease; p.mu is held and the permit not
// stopped.
func (p *Permit) loseLocked() {
	p.stopped = true
	p.lostAt = time.Now()
	p.endLocked(ErrLost)
	p.unkey() // first: a holder told of the loss finds the key gone
	p.lost.Set()
}

// unkey ends the permit's use of its key in its Keyed, once: after a
// Release, or the loss of its lease, the key need not be kept for it. (A
// Keyed whose holders never called Release would keep their keys forever
// otherwise; a Release after the loss still works, on the Semaphore the
// Permit keeps.)
func (p *Permit) unkey() {
	if p.keyed != nil && !p.unkeyed.Swap(true) {
		p.s.keyed.unref(p.s.key, p.keyed)
	}
}

// tick renews the lease every third of it until Release, and signals its
// loss when Redis says it ended or when until passes with no renewal. A
// renewal that fails is tried again sooner, but not so often as to hammer a
// Redis that is coming back. It runs on p.t, which it sets again.
func (p *Permit) tick() {
	s := p.s
	every := s.lease / 3
	retry := max(every/4, 5*time.Millisecond)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	now := time.Now()
	if !now.Before(p.until) {
		p.loseLocked()
		return
	}
	if !now.Before(p.next) {
		if s.noRenew.Load() {
			p.next = now.Add(every)
		} else {
			// A renewal still under way when the lease can no longer be
			// proven is given up, and so is one at Release.
			ctx, cancel := context.WithDeadline(context.WithoutCancel(p.parent), p.until)
			p.renewCancel = cancel
			p.mu.Unlock()
			renewed, err := p.renew(ctx)
			p.mu.Lock()
			p.renewCancel = nil
			cancel()
			if p.stopped {
				return
			}
			switch {
			case err == nil && !renewed:
				p.loseLocked()
				return
			case err == nil:
				p.until = s.validUntil(now, s.lease)
				p.next = now.Add(every)
			default:
				// Sooner when the lease would end first: a short
				// lease leaves less than the floor of retry.
				p.next = time.Now().Add(min(retry, time.Until(p.until)/2))
			}
		}
	}
	p.t.Reset(max(min(time.Until(p.next), time.Until(p.until)), 0))
}

// renew extends the lease. It runs in a timer's goroutine, where a panic of
// the client's (a hook of the user's) would end the program, with nobody to
// receive it: it counts as a renewal that failed, tried again sooner.
func (p *Permit) renew(ctx context.Context) (renewed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			renewed, err = false, fmt.Errorf("%w: a client hook panicked: %v", ErrUnavailable, r)
		}
	}()
	s := p.s
	v, err := s.eval(ctx, s.renewCall, p.id, s.leaseArg, s.keyTTLArg)
	if err != nil {
		return false, err
	}
	n, ok := v.(int64)
	if !ok {
		return false, unexpected(v)
	}
	return n == 1, nil
}
