package ctxsync

import (
	"context"
	"errors"
	"math"
	"sync/atomic"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// ErrReleasedTooManyTimes is the error a BoundedSemaphore panics with when a
// Release would raise its count above its initial value. Recover it and test
// with errors.Is.
var ErrReleasedTooManyTimes = errors.New("ctxsync: BoundedSemaphore released too many times")

// A Semaphore manages a count of permits. Acquire takes one, waiting while none
// is free; Release gives one back. A Release beyond the initial count raises the
// count, as asyncio.Semaphore does; use BoundedSemaphore to treat that as a bug.
//
// Use NewSemaphore; the zero Semaphore has no permits until a Release adds one.
// A Semaphore must not be copied after first use. A Semaphore is safe for
// concurrent use by multiple goroutines.
//
// Waiters are served first in, first out: Release hands its permit straight to
// the oldest waiter, and neither Acquire nor TryAcquire can take a permit while
// anyone is queued.
//
// In the terminology of the Go memory model, a call to Release is synchronized
// before the return of the Acquire or TryAcquire that takes its permit.
type Semaphore struct {
	_ nocopy.NoCopy

	// state is the number of free permits, with semWaiters (the sign bit)
	// set while goroutines are queued. The bit is set and cleared only with
	// q locked, and it is set exactly when q is not empty. Acquire's fast path
	// takes a permit by CAS only from a positive state, so it never overtakes
	// a queued waiter; Release adds a permit with one atomic Add whatever the
	// state, and if the bit was set it locks q and moves a permit from the
	// count to the oldest waiter (see handOff).
	state atomic.Int64

	bounded bool  // Release panics at bound: BoundedSemaphore
	bound   int64 // the initial count, when bounded

	q waitq.Queue[struct{}] // the waiters; its lock also guards the slow paths
}

const semWaiters = math.MinInt64

// NewSemaphore returns a Semaphore with n free permits.
//
// NewSemaphore panics if n is negative.
func NewSemaphore(n int) *Semaphore {
	if n < 0 {
		panic("ctxsync: NewSemaphore with negative count")
	}
	s := new(Semaphore)
	s.state.Store(int64(n))
	return s
}

// Acquire takes a permit, waiting if needed until one is free, after the
// goroutines already waiting, or until ctx is done.
//
// On failure it returns ctx.Err() and the semaphore is left as it was: a ctx
// that is already done fails even when a permit is free. If a permit is handed
// over at the same moment that ctx ends, Acquire either returns nil holding it
// or passes it on and returns ctx.Err(); it is never lost.
func (s *Semaphore) Acquire(ctx context.Context) error {
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	if c := s.state.Load(); c > 0 && s.state.CompareAndSwap(c, c-1) {
		return nil
	}
	return s.acquireSlow(ctx)
}

func (s *Semaphore) acquireSlow(ctx context.Context) error {
	if waitq.Pause(); s.TryAcquire() {
		return nil
	}
	s.q.Lock()
	for {
		c := s.state.Load()
		if c > 0 {
			// Free, and nobody queued: the bit is clear.
			if s.state.CompareAndSwap(c, c-1) {
				s.q.Unlock()
				return nil
			}
			continue
		}
		// Set the bit before queueing, so that a concurrent Release sees it
		// and comes to the queue for us. If it is set already, others are
		// queued, and a permit in the count is on its way to the oldest.
		if c < 0 || s.state.CompareAndSwap(0, semWaiters) {
			break
		}
	}
	w := s.q.Push(struct{}{})
	s.q.Unlock()

	if _, ok := s.q.Wait(ctx, w); ok {
		return nil // Release handed a permit to us.
	}

	s.q.Lock()
	if _, granted, _ := s.q.Cancel(w); granted {
		// A permit arrived as ctx ended: pass it on, so that the caller, told
		// of the error, holds nothing.
		s.releaseLocked()
	} else if s.q.Len() == 0 {
		// The last waiter left: clear the bit, keeping any permits that
		// releases added meanwhile, which are free now.
		s.clearWaiters()
	}
	s.q.Unlock()
	return ctx.Err()
}

// TryAcquire takes a permit if one is free and nobody is waiting, and reports
// whether it did. It never waits.
func (s *Semaphore) TryAcquire() bool {
	for {
		c := s.state.Load()
		if c <= 0 {
			return false
		}
		if s.state.CompareAndSwap(c, c-1) {
			return true
		}
	}
}

// Release gives a permit back. If goroutines are waiting, the oldest one takes
// it. A Release without a matching Acquire raises the count; Release panics if
// that would carry the count past math.MaxInt64.
func (s *Semaphore) Release() {
	if s.state.Add(1) < 0 {
		s.handOff()
	}
}

// handOff moves a permit that Release added to the count, while the waiters
// bit was set, to the oldest waiter.
//
// While the bit is set the count only holds such permits, each with its
// handOff to come: the bit is set from a count of 0, and nothing else adds to
// the count or takes from it until the bit is cleared, which frees what the
// count holds. So handOff takes one only if the count is above 0; if it is 0,
// the caller's permit was freed that way (and the bit set again since), or
// taken by an earlier handOff that served a waiter with it.
func (s *Semaphore) handOff() {
	s.q.Lock()
	c := s.state.Load()
	switch {
	case c >= 0:
		// The waiters left before we locked: the permit is free.
	case s.q.Len() == 0:
		// The bit is set only while someone waits: this Release carried the
		// count past its maximum into the sign bit.
		s.state.Add(-1)
		s.q.Unlock()
		panic("ctxsync: Semaphore.Release overflows the count")
	case c != semWaiters:
		s.state.Add(-1)
		s.releaseLocked()
	}
	s.q.Unlock()
}

// clearWaiters clears the waiters bit, which is set, keeping the count:
// adding the sign bit to itself carries it out. s.q must be locked.
func (s *Semaphore) clearWaiters() { s.state.Add(semWaiters) }

// releaseBounded is Release for a BoundedSemaphore, which must check the
// bound before it adds a permit, so it cannot use Release's blind Add.
func (s *Semaphore) releaseBounded() {
	for {
		c := s.state.Load()
		if c < 0 {
			break // waiters: the permit goes to the oldest
		}
		if c >= s.bound {
			panic(ErrReleasedTooManyTimes)
		}
		if s.state.CompareAndSwap(c, c+1) {
			return
		}
	}
	s.q.Lock()
	s.releaseLocked()
	s.q.Unlock()
}

// releaseLocked gives a permit, which is in no count, to the oldest waiter, or
// to the count if nobody waits. s.q must be locked.
func (s *Semaphore) releaseLocked() {
	if w := s.q.Front(); w != nil {
		s.q.Grant(w, struct{}{})
		if s.q.Len() == 0 {
			s.clearWaiters() // the last waiter is served
		}
		return
	}
	// Nobody is queued, so the bit is clear, and stays so while we hold the
	// lock: only fast-path Acquires and Releases change the state.
	for {
		c := s.state.Load()
		if s.bounded && c >= s.bound {
			s.q.Unlock()
			panic(ErrReleasedTooManyTimes)
		}
		if s.state.CompareAndSwap(c, c+1) {
			return
		}
	}
}

// Available returns the number of free permits at the moment of the call.
func (s *Semaphore) Available() int {
	return int(max(s.state.Load(), 0))
}

// Waiting returns the number of goroutines queued in Acquire at the moment of
// the call.
func (s *Semaphore) Waiting() int {
	s.q.Lock()
	defer s.q.Unlock()
	return s.q.Len()
}

// A BoundedSemaphore is a Semaphore whose count can never rise above its
// initial value: a Release without a matching Acquire is a bug, and it panics
// with an error e for which errors.Is(e, ErrReleasedTooManyTimes) holds.
//
// Use NewBoundedSemaphore; the zero BoundedSemaphore has no permits and panics
// on any Release. A BoundedSemaphore must not be copied after first use. It is
// safe for concurrent use by multiple goroutines, and it serves waiters first in,
// first out, as Semaphore does.
//
// In the terminology of the Go memory model, a call to Release is synchronized
// before the return of the Acquire or TryAcquire that takes its permit.
type BoundedSemaphore struct {
	s Semaphore
}

// NewBoundedSemaphore returns a BoundedSemaphore with n free permits, and at
// most n ever.
//
// NewBoundedSemaphore panics if n is negative.
func NewBoundedSemaphore(n int) *BoundedSemaphore {
	if n < 0 {
		panic("ctxsync: NewBoundedSemaphore with negative count")
	}
	b := &BoundedSemaphore{}
	b.s.bounded = true
	b.s.bound = int64(n)
	b.s.state.Store(int64(n))
	return b
}

// Acquire takes a permit, waiting if needed until one is free, after the
// goroutines already waiting, or until ctx is done. It fails and behaves under
// cancellation exactly as Semaphore.Acquire does.
func (b *BoundedSemaphore) Acquire(ctx context.Context) error { return b.s.Acquire(ctx) }

// TryAcquire takes a permit if one is free and nobody is waiting, and reports
// whether it did. It never waits.
func (b *BoundedSemaphore) TryAcquire() bool { return b.s.TryAcquire() }

// Release gives a permit back. If goroutines are waiting, the oldest one takes
// it.
//
// Release panics with an error matching ErrReleasedTooManyTimes if the count is
// already at its initial value.
func (b *BoundedSemaphore) Release() {
	if !b.s.bounded {
		panic(ErrReleasedTooManyTimes) // the zero value: bound 0
	}
	b.s.releaseBounded()
}

// Available returns the number of free permits at the moment of the call.
func (b *BoundedSemaphore) Available() int { return b.s.Available() }

// Waiting returns the number of goroutines queued in Acquire at the moment of
// the call.
func (b *BoundedSemaphore) Waiting() int { return b.s.Waiting() }
