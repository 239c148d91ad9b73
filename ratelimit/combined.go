package ratelimit

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A Combined grants events only when every one of its limiters grants them:
// "350 per 10 s and 10,000 per hour". All makes one.
//
// AllowN takes from every limiter or from none. It takes from each in turn;
// when one refuses, it gives back what the others took, exactly, before it
// returns. (Users of x/time/rate build this from reservations, which cannot
// be given back exactly, golang/go#56924: a refused call leaks tokens of the
// limits that had room.) While it runs, a limiter that has granted may look
// emptier to others, for that moment, but never fuller: the limits hold
// exactly. A TokenBucket's refund is exact when no time passes between the
// take and the refund, as in a synctest bubble; otherwise it gives back no
// more than the bucket would hold had the take never happened (see
// TokenBucket).
//
// WaitN waits first in, first out, behind the other waiters of the Combined,
// until every limiter can grant at once, then takes from all as AllowN does.
// It holds nothing while it waits: it sleeps until the slowest limiter will
// have the events, tries all, and if another has run dry in the meantime,
// gives back what it took and sleeps again. So no limiter's events are held
// for longer than one try, and a waiter that gives up has nothing to give
// back. Calls made to the limiters themselves are not queued behind the
// Combined's waiters, so a steady stream of them can keep a Combined's
// waiter waiting; the waiters of each limiter are served before the
// Combined takes from it. A limiter's SetRate or SetBurst is seen by the
// Combined's first waiter when it next wakes, not at once.
//
// A Combined counts events, not calls: one WaitN(ctx, 3) takes 3 from each
// limiter. Nest a Combined in All to build trees; it is flattened, and waits
// behind the waiters of the Combineds nested in it.
//
// Use All; the zero Combined is not usable: its methods panic. A Combined
// must not be copied after first use. It is safe for concurrent use by
// multiple goroutines.
type Combined struct {
	_       nocopy.NoCopy
	members []member
	inner   []*Combined // nested, flattened: their waiters go first

	w      waiters
	queued atomic.Bool // goroutines wait in WaitN: AllowN refuses
}

// errZeroCombined is the panic of a zero Combined's first use.
const errZeroCombined = "ratelimit: use All; the zero Combined is not usable"

// All returns a Combined that grants n events only when every one of
// limiters grants them (see Combined).
//
// Each limiter must be a *TokenBucket, *SlidingWindow,
// *SlidingWindowCounter or *Combined made by this package: only these can
// give events back exactly. To limit per key, make a Combined per key with
// NewKeyed; to count decisions, Wrap the Combined in a Tally.
//
// All panics if limiters is empty, if one is nil, the zero value of its
// type, or of another type, or if one limiter appears twice (directly or in
// a nested Combined), which would take n from it twice.
func All(limiters ...Limiter) *Combined {
	if len(limiters) == 0 {
		panic("ratelimit: All with no limiters")
	}
	c := &Combined{}
	seen := make(map[member]bool)
	add := func(m member) {
		if seen[m] {
			panic(fmt.Sprintf("ratelimit: All with the same %T twice; it would take n from it twice", m))
		}
		seen[m] = true
		m.most() // the zero value of a limiter panics here, not at first use
		c.members = append(c.members, m)
	}
	for i, l := range limiters {
		if isNil(l) {
			panic(fmt.Sprintf("ratelimit: All with a nil limiter (argument %d)", i))
		}
		if in, ok := l.(*Combined); ok {
			in.check()
			for _, m := range in.members {
				add(m)
			}
			c.inner = append(c.inner, in)
			c.inner = append(c.inner, in.inner...)
			continue
		}
		m := memberOf(l)
		if m == nil {
			panic(fmt.Sprintf("ratelimit: All of a %T; only this package's *TokenBucket, *SlidingWindow, *SlidingWindowCounter and *Combined can give events back exactly", l))
		}
		add(m)
	}
	return c
}

// check panics if c was not made by All.
func (c *Combined) check() {
	if c.members == nil {
		panic(errZeroCombined)
	}
}

// Allow reports whether one event may happen now, and if so takes it from
// every limiter.
func (c *Combined) Allow() bool { return c.AllowN(1) }

// AllowN reports whether n events may happen now, in every limiter, and if
// so takes them from every one. When it returns false it takes nothing: what
// one limiter granted before another refused is given back. It returns false
// while goroutines wait in WaitN, of the Combined or of a Combined nested in
// it, or of one of its limiters.
//
// AllowN panics if n is below 1.
func (c *Combined) AllowN(n int) bool {
	checkN(n, "Combined.AllowN")
	return c.grantAt(n, nowNs(), false)
}

func (c *Combined) allowAt(n int, now int64) bool { return c.grantAt(n, now, false) }

// grantAt takes n events at now from every member, or from none. Only the
// head of the queue may take while goroutines wait.
func (c *Combined) grantAt(n int, now int64, head bool) bool {
	c.check()
	if !head && c.queued.Load() {
		return false
	}
	for _, in := range c.inner {
		if in.queued.Load() {
			return false
		}
	}
	// Grants of up to 4 members stay on the stack.
	var buf [4]grant
	gs := buf[:0]
	for i, m := range c.members {
		var ok bool
		var g grant
		if b, isBucket := m.(*TokenBucket); isBucket {
			// The common case, called directly: the hot path of two
			// buckets is then two compare-and-swaps and little else.
			ok = b.take(n, now, false, nil, &g)
		} else {
			ok, g = m.grantAt(n, now)
		}
		if !ok {
			// Given back last first: a TokenBucket gives back exactly when
			// nothing was taken after, as here for the others of the call.
			for j := i - 1; j >= 0; j-- {
				c.members[j].refund(n, gs[j])
			}
			return false
		}
		gs = append(gs, g)
	}
	return true
}

// Take is AllowN with the details of the decision: Remaining is the least
// of the limiters' Remaining, RetryAfter and ResetAfter the greatest of
// theirs (Never if any says Never), and Limit and Window are those of the
// limiter with the least Remaining.
//
// Take panics if n is below 1.
func (c *Combined) Take(n int) Decision {
	checkN(n, "Combined.Take")
	return c.takeAt(n, nowNs())
}

func (c *Combined) takeAt(n int, now int64) Decision {
	ok := c.grantAt(n, now, false)
	var d Decision
	for i, m := range c.members {
		var md Decision
		m.peekAt(&md, ok, n, now)
		if i == 0 || md.Remaining < d.Remaining {
			d.Limit, d.Window, d.Remaining = md.Limit, md.Window, md.Remaining
		}
		switch {
		case d.RetryAfter == Never:
		case md.RetryAfter == Never:
			d.RetryAfter = Never
		default:
			d.RetryAfter = max(d.RetryAfter, md.RetryAfter)
		}
		d.ResetAfter = max(d.ResetAfter, md.ResetAfter)
	}
	d.Allowed = ok
	if ok {
		d.RetryAfter = 0
	}
	return d
}

// Wait waits until one event may happen in every limiter, after the
// goroutines already waiting, then takes it from each: WaitN(ctx, 1).
func (c *Combined) Wait(ctx context.Context) error { return c.WaitN(ctx, 1) }

// WaitN waits until n events may happen in every limiter, after the
// goroutines already waiting in the Combined's WaitN, then takes them from
// each. It holds no limiter's events while it waits (see Combined).
//
// It fails at once with ErrExceedsBurst if n is above the burst or limit of
// any limiter, and with ErrWouldExceedDeadline if the events cannot come
// before the deadline of ctx, as far as the limiters can tell. Otherwise, on
// failure, it returns ctx.Err() and takes nothing; a ctx that is already
// done fails even when the events are available.
//
// WaitN panics if n is below 1.
func (c *Combined) WaitN(ctx context.Context, n int) error {
	checkN(n, "Combined.WaitN")
	c.check() // the zero Combined panics even with a done ctx
	if err := waitq.CtxErr(ctx, "ratelimit"); err != nil {
		return err
	}
	if c.grantAt(n, nowNs(), false) {
		return nil
	}
	return c.w.waitN(ctx, (*combinedWaitable)(c), n)
}

// combinedWaitable is a Combined seen by its waiters.
type combinedWaitable Combined

// minPoll is the shortest sleep of a Combined's head refused while every
// limiter says it is ready: a limiter's own head, or a nested Combined's
// waiters, are about to take what it saw. Without it the head would spin.
const minPoll = 50 * time.Microsecond

func (c *combinedWaitable) maxLocked() int {
	most := math.MaxInt
	for _, m := range c.members {
		most = min(most, m.most()) // SetBurst may change it
	}
	return most
}

func (c *combinedWaitable) takeLocked(n int, now int64) (bool, int64) {
	if (*Combined)(c).grantAt(n, now, true) {
		return true, 0
	}
	// Sleep until the slowest has the events: before, one of them would
	// refuse again.
	wait := int64(0)
	for _, m := range c.members {
		wait = max(wait, m.waitFor(n, now))
	}
	return false, max(wait, int64(minPoll))
}

func (c *combinedWaitable) earliestLocked(ahead, n int, now int64) int64 {
	at := now
	for _, m := range c.members {
		at = max(at, m.earliest(ahead, n, now))
	}
	return at
}

func (c *combinedWaitable) setQueuedLocked(queued bool) { c.queued.Store(queued) }
