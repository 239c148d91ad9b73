package breaker

// setStateLocked moves to state to, starting a new generation of counts, and
// queues the change for OnStateChange. b.mu must be held.
func (b *Breaker) setStateLocked(to State) {
	old := b.state.Load()
	from := State(old & stateMask)
	gen := old>>stateBits + 1
	counts := b.takeCountsLocked()
	b.total.add(counts)
	b.consec.Store(consecTag(gen << stateBits))
	b.successesAtFailure.Store(0)
	b.probes, b.probeWins = 0, 0
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if b.window != nil && to == Closed {
		b.window.reset(gen)
	}
	b.state.Store(gen<<stateBits | old&disabledBit | uint64(to))
	if b.s.OnStateChange != nil && from != to {
		b.events = append(b.events, event{from, to, counts})
	}
}

// unlock unlocks b.mu, then reports the changes of state queued meanwhile, in
// order and outside the lock. If another goroutine is already reporting, it
// reports these too, after its own.
func (b *Breaker) unlock() {
	if len(b.events) == 0 || b.delivering {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	for len(b.events) > 0 {
		e := b.events[0]
		b.events = b.events[1:]
		b.mu.Unlock()
		b.deliver(e)
		b.mu.Lock()
	}
	b.events = nil
	b.delivering = false
	b.mu.Unlock()
}

// deliver calls OnStateChange; if it panics, the reporting is handed back
// before the panic goes on, so that later changes are still reported.
func (b *Breaker) deliver(e event) {
	ok := false
	defer func() {
		if !ok {
			b.mu.Lock()
			b.delivering = false
			b.mu.Unlock()
		}
	}()
	b.s.OnStateChange(e.from, e.to, e.counts)
	ok = true
}

// takeCountsLocked returns the counts of the current state and starts them
// again from 0. Each count is swapped, not read then cleared, so that an
// outcome counted meanwhile lands in one state or the next, never in
// neither: Metrics' Total misses nothing. b.mu must be held.
func (b *Breaker) takeCountsLocked() Counts {
	consec, atFailure := b.consec.Load(), b.successesAtFailure.Load()
	c := Counts{
		Successes:           b.successes.Take(),
		Failures:            b.failures.Swap(0),
		Ignored:             b.ignored.Swap(0),
		Rejected:            b.rejected.Swap(0),
		Slow:                b.slow.Swap(0),
		ConsecutiveFailures: int64(consec & consecCount),
	}
	c.Requests = c.Successes + c.Failures + c.Ignored
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveSuccesses = max(0, c.Successes-atFailure)
	}
	return c
}

// countsLocked returns the counts of the current state. b.mu must be held.
func (b *Breaker) countsLocked() Counts {
	c := Counts{
		Successes:           b.successes.Load(),
		Failures:            b.failures.Load(),
		Ignored:             b.ignored.Load(),
		Rejected:            b.rejected.Load(),
		Slow:                b.slow.Load(),
		ConsecutiveFailures: int64(b.consec.Load() & consecCount),
	}
	c.Requests = c.Successes + c.Failures + c.Ignored
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveSuccesses = max(0, c.Successes-b.successesAtFailure.Load())
	}
	return c
}
