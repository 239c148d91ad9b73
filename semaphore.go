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
// the oldest waiter that no earlier Release has promised one, and neither
// Acquire nor TryAcquire takes a permit while a queued goroutine is without
// one or the promise of one. (A permit promised by a Release still on its way
// to the waiter is that waiter's: a later Release's permit, free meanwhile,
// may go to a newcomer.)
//
// In the terminology of the Go memory model, a call to Release is synchronized
// before the return of the Acquire or TryAcquire that takes its permit.
type Semaphore struct {
	_ nocopy.NoCopy

	// state is a ticket count. Positive, it is the number of free permits;
	// negative, it is minus the number of goroutines counted as waiting to
	// whom no Release has promised a permit yet. Acquire counts itself with
	// one atomic Add of -1 and has a permit if the result is not negative;
	// Release adds 1 the same way, and if the result is not positive it has
	// promised its permit to a waiter and must deliver it (see deliverLocked).
	// Neither fast path reads the state first: a lone atomic Add is cheaper
	// than a load and a CAS.
	state atomic.Int64

	bound int64 // the initial count, for a BoundedSemaphore's Release

	// owed settles promised permits that cannot go to a queued waiter.
	// Positive, it counts permits promised to goroutines that counted
	// themselves waiting but have not queued yet: the first to lock q takes
	// one instead of queueing. Negative, it counts promised permits still on
	// their way (their Release has not locked q yet) whose waiter has left,
	// having put a permit back in its place: they are dropped on arrival.
	// owed is never positive while anyone is queued.
	owed int64 // guarded by q's lock

	q waitq.Queue[struct{}] // the waiters; its lock also guards owed
}

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
func (s *Semaphore) Acquire(ctx context.Context) (err error) {
	// Look at ctx before the take and after it (see Lock.Lock). After it,
	// the deferred call gives the permit back if ctx.Err panics, as keep's
	// does; made here rather than by a call to keep, it saves a call on the
	// hottest path. (Not through ctx's Done channel: one made in a
	// testing/synctest bubble may not be read outside it, and a ctx whose
	// Err can be read there must work there.)
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	if s.state.Add(-1) >= 0 {
		kept := false
		defer func() {
			if !kept {
				s.Release()
			}
		}()
		if err = ctx.Err(); err == nil {
			kept = true
		}
		return err
	}
	return s.acquireSlow(ctx)
}

// acquireSlow finishes an Acquire whose Add found no free permit, and so
// counted the caller as waiting.
func (s *Semaphore) acquireSlow(ctx context.Context) error {
	done := s.doneCounted(ctx) // before any lock: the caller's code (see waitq.Ended)
	if s.withdraw() {
		if err := ctx.Err(); err != nil {
			return err // out of the count: nothing changed
		}
		// Out of the count, pause and look again before counting ourselves
		// in for good (see waitq.Pause).
		if waitq.Pause(); s.TryAcquire() {
			return s.keep(ctx)
		}
		s.q.Lock()
		if s.state.Add(-1) >= 0 {
			s.q.Unlock()
			return s.keep(ctx)
		}
	} else {
		// A permit is promised to every goroutine counted, the caller
		// included: it is owed to us, or will go to us once we queue.
		s.q.Lock()
	}
	if s.owed > 0 {
		s.owed-- // promised to a goroutine not yet queued: us
		s.q.Unlock()
		return s.keep(ctx)
	}
	w := s.q.PushDone(done, struct{}{})
	s.q.Unlock()

	if _, ok := s.q.Wait(done, w); ok {
		return nil // Release handed a permit to us.
	}

	s.q.Lock()
	queued := w.Queued()
	if _, granted, _ := s.q.Cancel(w); granted {
		// A permit arrived as ctx ended: pass it on, so that the caller, told
		// of the error, holds nothing.
		s.releaseLocked()
	} else if queued {
		s.leaveLocked()
	}
	// Otherwise a Release passed over us, our ctx having ended, and took us
	// out of the count then (see deliverLocked).
	s.q.Unlock()
	return waitq.DoneErr(ctx)
}

// leaveLocked takes out of the count a goroutine counted as waiting that
// leaves without a permit. s.q must be locked.
func (s *Semaphore) leaveLocked() {
	if !s.withdraw() {
		// Every goroutine counted, the one leaving included, has a permit
		// promised and on its way, since none is owed while anyone queues.
		// One of them will find it gone: have it dropped, and put a permit
		// back in its place.
		s.owed--
		s.releaseLocked()
	}
}

// doneCounted returns ctx.Done() for acquireSlow, whose caller Acquire has
// counted as waiting. Done is the caller's code: if it panics, the deferred
// call takes the caller out of the count, as a waiter that gave up is (see
// the end of acquireSlow), so that no Release promises its permit to a
// goroutine that has gone.
func (s *Semaphore) doneCounted(ctx context.Context) <-chan struct{} {
	ok := false
	defer func() {
		if !ok && !s.withdraw() {
			// A permit is on its way to us: have it dropped, and put one
			// back in its place.
			s.q.Lock()
			s.owed--
			s.releaseLocked()
			s.q.Unlock()
		}
	}()
	done := ctx.Done()
	ok = true
	return done
}

// keep settles a permit that Acquire took by itself, after the caller's ctx
// was first checked: if ctx has ended since, the permit may have been freed
// after the ctx ended, and a caller whose ctx ended must not get it. It is
// given back, and keep returns ctx.Err().
//
// The look is the caller's code, and may panic: the permit is then given
// back too (by the deferred call), so that the panic loses none.
func (s *Semaphore) keep(ctx context.Context) (err error) {
	kept := false
	defer func() {
		if !kept {
			s.Release()
		}
	}()
	if err = ctx.Err(); err == nil {
		kept = true
	}
	return err
}

// withdraw takes the caller, counted as waiting, back out of the count if
// some goroutine counted has no permit promised to it, and reports whether it
// did. If it did not, a permit is on its way to the goroutines counted.
func (s *Semaphore) withdraw() bool {
	for {
		c := s.state.Load()
		if c >= 0 {
			return false
		}
		if s.state.CompareAndSwap(c, c+1) {
			return true
		}
	}
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

// Release gives a permit back. If goroutines are waiting, the oldest one that
// no earlier Release has promised a permit takes it. A Release without a
// matching Acquire raises the count; Release panics if that would carry the
// count past math.MaxInt64.
func (s *Semaphore) Release() {
	if c := s.state.Add(1); c <= 0 {
		s.handOff(c)
	}
}

// handOff delivers the permit that a Release promised to a waiter: c, the
// count after its Add, was not positive.
func (s *Semaphore) handOff(c int64) {
	if c == math.MinInt64 {
		// Not 2⁶³ waiters: the Add carried a count of math.MaxInt64 over.
		s.state.Add(-1)
		panic("ctxsync: Semaphore.Release overflows the count")
	}
	s.q.Lock()
	s.deliverLocked()
	s.q.Unlock()
}

// deliverLocked settles a permit promised to the goroutines counted as
// waiting: the oldest queued waiter takes it, unless it is owed to one not
// yet queued, or its waiter has left (see owed). s.q must be locked.
func (s *Semaphore) deliverLocked() {
	for {
		if s.owed < 0 {
			s.owed++ // its waiter left, and put a permit back
			return
		}
		n := s.q.Len()
		w := s.q.Front()
		dropped := n - s.q.Len()
		if w != nil {
			// Serve the oldest waiter before settling those Front passed
			// over: their leaving may free a permit and have ours dropped
			// (see leaveLocked), and w would then wait for another
			// Release's hand-off, its permit lying free meanwhile.
			s.q.Grant(w, struct{}{})
			s.leaveDroppedLocked(dropped)
			return
		}
		if dropped == 0 {
			// Nobody queued: the permit is owed to a goroutine counted
			// and not yet queued.
			s.owed++
			return
		}
		// Front passed over waiters whose ctx has ended, and found nobody
		// else. Their leaving may put a permit back or leave ours to be
		// dropped (see owed): look again.
		s.leaveDroppedLocked(dropped)
	}
}

// leaveDroppedLocked takes out of the count the n waiters that Front has
// just passed over, their ctx having ended: now, not when their goroutines
// next run. Until then a permit, had it no other taker, would sit owed to
// one of them, neither free nor granted, and TryAcquire and Available would
// miss it. Their own cancel paths find them settled (see acquireSlow). s.q
// must be locked.
func (s *Semaphore) leaveDroppedLocked(n int) {
	for range n {
		s.leaveLocked()
	}
}

// releaseBounded is Release for a BoundedSemaphore, which must check the
// bound before it adds a permit, so it cannot use Release's blind Add.
func (s *Semaphore) releaseBounded() {
	for {
		c := s.state.Load()
		if c >= s.bound {
			panic(ErrReleasedTooManyTimes)
		}
		if s.state.CompareAndSwap(c, c+1) {
			if c < 0 {
				s.handOff(c + 1)
			}
			return
		}
	}
}

// releaseLocked puts back a permit that the caller was given but must not
// keep. s.q must be locked.
func (s *Semaphore) releaseLocked() {
	if s.state.Add(1) <= 0 {
		s.deliverLocked()
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
// most n ever. With n = 0, as with the zero BoundedSemaphore, every Release
// panics.
//
// NewBoundedSemaphore panics if n is negative.
func NewBoundedSemaphore(n int) *BoundedSemaphore {
	if n < 0 {
		panic("ctxsync: NewBoundedSemaphore with negative count")
	}
	b := &BoundedSemaphore{}
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

// Release gives a permit back. If goroutines are waiting, the oldest one that
// no earlier Release has promised a permit takes it.
//
// Release panics with an error matching ErrReleasedTooManyTimes if the count is
// already at its initial value.
func (b *BoundedSemaphore) Release() {
	if b.s.bound == 0 {
		// Nobody can hold a permit, so none can come back. The count alone
		// would not tell: with goroutines queued it is below 0.
		panic(ErrReleasedTooManyTimes)
	}
	b.s.releaseBounded()
}

// Available returns the number of free permits at the moment of the call.
func (b *BoundedSemaphore) Available() int { return b.s.Available() }

// Waiting returns the number of goroutines queued in Acquire at the moment of
// the call.
func (b *BoundedSemaphore) Waiting() int { return b.s.Waiting() }
