package pool

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/internal/clock"
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

// healthCheck runs Config.HealthCheck on the value of r, for at most
// HealthCheckTimeout. The lock must not be held.
func (p *Pool[T]) healthCheck(ctx context.Context, r *Resource[T]) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.HealthCheckTimeout)
	defer cancel()
	return p.cfg.HealthCheck(ctx, r.v)
}

// fillLocked starts making resources for the waiters that no call to New
// under way will serve, while the pool has room. p.q must be locked.
func (p *Pool[T]) fillLocked(ctx context.Context) {
	for p.q.Len() > p.making && p.totalLocked() < p.cfg.MaxSize && !p.closed {
		p.startMaking(ctx)
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
	p.wg.Add(1)
	go p.make(context.WithoutCancel(ctx))
}

// make is the goroutine of startMaking: it calls New, which Close cancels,
// and hands the resource to the oldest waiter or to the idle ones, or the
// error to the oldest waiter.
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

// newValue calls Config.New, through the Breaker if there is one.
func (p *Pool[T]) newValue(ctx context.Context) (T, error) {
	if p.cfg.Breaker != nil {
		return breaker.Do(ctx, p.cfg.Breaker, p.cfg.New)
	}
	return p.cfg.New(ctx)
}

// wake makes the maintainer look early, to top MinIdle up.
func (p *Pool[T]) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
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
