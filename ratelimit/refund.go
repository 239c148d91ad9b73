package ratelimit

// This file holds what All needs of each limiter of the package: to take
// events as AllowN does and, if another limiter refuses, to give them back
// exactly; to say how the limiter stands without taking anything; and to
// tell when it could grant.

// A grant is what a limiter needs to give back the events it granted to a
// Combined that another limiter then refused.
type grant struct {
	// at is, for a TokenBucket, the theoretical arrival time the grant left
	// behind; for a SlidingWindow, the time it recorded the events at; for a
	// SlidingWindowCounter, the start of the fixed window it counted them in.
	at int64
	// cost is, for a TokenBucket, the time the tokens took: n·tokenNs.
	cost int64
}

// A member is a limiter of this package as a Combined sees it. Every method
// takes the limiter's own lock, if it has one, and runs no user code.
type member interface {
	nsLimiter
	// grantAt is allowAt that returns, on a grant, what refund needs. By
	// value: a pointer through an interface would escape, and allocate.
	grantAt(n int, now int64) (bool, grant)
	// refund gives back n events that grantAt granted with g, and wakes the
	// limiter's own waiters to look again.
	refund(n int, g grant)
	// peekAt fills d with the decision ok for n events at now, taking
	// nothing.
	peekAt(d *Decision, ok bool, n int, now int64)
	// earliest returns a lower bound of when n events could be taken after
	// ahead events of a Combined's waiters; it counts none of the limiter's
	// own waiters, so that it stays a lower bound.
	earliest(ahead, n int, now int64) int64
	// waitFor returns how long from now until n events could be taken after
	// the limiter's own waiters; math.MaxInt64 if never. It counts them
	// exactly (aheadLocked), not by the bound w.queued keeps: a Combined's
	// head checks its deadline against it, and must not fail for waiters
	// whose ctx has ended.
	waitFor(n int, now int64) int64
	// most is the most events the limiter can ever allow at once.
	most() int
}

// memberOf returns l as a member, or nil if it is not a limiter of this
// package itself. A type switch, as in nsOf: a user's type that embeds a
// *TokenBucket has its unexported methods, but not its promise to give
// events back.
func memberOf(l Limiter) member {
	switch l := l.(type) {
	case *TokenBucket:
		return l
	case *SlidingWindow:
		return l
	case *SlidingWindowCounter:
		return l
	}
	return nil
}

func (b *TokenBucket) grantAt(n int, now int64) (bool, grant) {
	var g grant
	return b.take(n, now, false, nil, &g), g
}

// refund moves the theoretical arrival time back by the cost of the tokens
// given back, but never to before what the takes since the grant would have
// left had it never happened: each of them was made at the time refund reads
// or earlier, so the state without the grant is at least now plus their
// cost, tat - g.at. This matters only when time passed between the grant
// and the refund: a take after the grant that found the bucket full would
// otherwise be dated back to the grant, and its tokens counted twice. Once
// the grant's tokens have come back on their own (now past g.at), nothing is
// given back: there is nothing left to give. After a SetRate or SetBurst in
// between, tokens are given back at the cost they were taken at, never more
// than the bucket would have without them.
func (b *TokenBucket) refund(_ int, g grant) {
	if g.cost == 0 {
		return // an infinite rate takes nothing
	}
	now := clampNow(nowNs())
	for {
		s := b.state.Load()
		if s&tbBusy != 0 {
			b.w.q.Lock() // the setter holds it: wait for it
			//lint:ignore SA2001 locking is the wait: the setter holds the lock while the busy bit is set
			b.w.q.Unlock()
			continue
		}
		tat := s >> tbShift
		back := max(tat-g.cost, now+(tat-g.at), tbNever)
		if back >= tat {
			return
		}
		if b.state.CompareAndSwap(s, back<<tbShift|s&tbQueued) {
			if s&tbQueued != 0 {
				// The head of the queue sleeps until the tokens it counted
				// on: these came early.
				b.w.q.Lock()
				b.w.kickLocked()
				b.w.q.Unlock()
			}
			return
		}
	}
}

func (b *TokenBucket) peekAt(d *Decision, ok bool, n int, now int64) {
	p := b.load()
	now = clampNow(now)
	b.decide(d, ok, n, now, b.base(b.state.Load(), now, p, false), p)
}

func (b *TokenBucket) earliest(ahead, n int, now int64) int64 {
	b.w.q.Lock()
	defer b.w.q.Unlock()
	return (*bucketWaitable)(b).earliestLocked(ahead, n, now)
}

func (b *TokenBucket) waitFor(n int, now int64) int64 {
	b.w.q.Lock()
	defer b.w.q.Unlock()
	at := (*bucketWaitable)(b).earliestLocked(b.w.aheadLocked(), n, now)
	if at == 1<<63-1 || clampNow(now) == tbMaxNow {
		return 1<<63 - 1
	}
	return max(0, at-clampNow(now))
}

func (b *TokenBucket) most() int { return b.load().burst }

func (s *SlidingWindow) grantAt(n int, now int64) (bool, grant) {
	var g grant
	return s.take(n, now, nil, &g), g
}

// refund removes n of the grants recorded at g.at. Grants made at one time
// are alike, so which n does not matter. The grants that recordLocked forgot
// since were outside the window when it did, and stay outside: taking the
// refunded ones away brings none of them back. If the run of g.at is itself
// forgotten, its grants have left the window, and nothing is left to give.
func (s *SlidingWindow) refund(n int, g grant) {
	s.w.q.Lock()
	defer s.w.q.Unlock()
	for k := s.rlen - 1; k >= 0; k-- {
		r := s.run(k)
		if r.t < g.at {
			return
		}
		if r.t > g.at {
			continue
		}
		start := s.first
		if k > 0 {
			start = s.run(k - 1).end
		}
		take := int64(min(n, int(r.end-start)))
		for j := k; j < s.rlen; j++ {
			s.run(j).end -= take
		}
		s.total -= take
		if r.end == start {
			// The run is empty: close the gap in the ring.
			for j := k; j < s.rlen-1; j++ {
				*s.run(j) = *s.run(j + 1)
			}
			s.rlen--
		}
		s.w.kickLocked()
		return
	}
}

func (s *SlidingWindow) peekAt(d *Decision, ok bool, n int, now int64) {
	s.check()
	s.w.q.Lock()
	defer s.w.q.Unlock()
	s.syncLocked(now)
	s.decideLocked(d, ok, n, now)
}

func (s *SlidingWindow) earliest(ahead, n int, now int64) int64 {
	s.w.q.Lock()
	defer s.w.q.Unlock()
	return addSat(now, s.waitLocked(ahead, n, now))
}

func (s *SlidingWindow) waitFor(n int, now int64) int64 {
	s.w.q.Lock()
	defer s.w.q.Unlock()
	return s.waitLocked(s.w.aheadLocked(), n, now)
}

func (s *SlidingWindow) most() int {
	s.check()
	return s.limit
}

func (c *SlidingWindowCounter) grantAt(n int, now int64) (bool, grant) {
	var g grant
	return c.take(n, now, nil, &g), g
}

// refund uncounts n events from the fixed window that counted them, if it is
// still the current or the previous one; older, it no longer counts.
func (c *SlidingWindowCounter) refund(n int, g grant) {
	c.w.q.Lock()
	defer c.w.q.Unlock()
	switch c.start {
	case g.at:
		c.curr -= min(n, c.curr)
	case addSat(g.at, c.window):
		c.prev -= min(n, c.prev)
	default:
		return
	}
	c.w.kickLocked()
}

func (c *SlidingWindowCounter) peekAt(d *Decision, ok bool, n int, now int64) {
	c.check()
	c.w.q.Lock()
	defer c.w.q.Unlock()
	c.advanceLocked(now)
	c.decideLocked(d, ok, n, now)
}

func (c *SlidingWindowCounter) earliest(ahead, n int, now int64) int64 {
	c.w.q.Lock()
	defer c.w.q.Unlock()
	return (*counterWaitable)(c).earliestLocked(ahead, n, now)
}

func (c *SlidingWindowCounter) waitFor(n int, now int64) int64 {
	c.w.q.Lock()
	defer c.w.q.Unlock()
	c.advanceLocked(now)
	k := queuedSum(c.w.aheadLocked(), n)
	if k > c.limit {
		return c.window // after the queue's events have aged out, at most
	}
	return max(1, c.waitLocked(k, now))
}

func (c *SlidingWindowCounter) most() int {
	c.check()
	return c.limit
}
