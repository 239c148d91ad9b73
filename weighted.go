package ctxsync

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// ErrExceedsCapacity is returned by Weighted.Acquire for a request larger than
// the capacity when the capacity has been changed by Resize: after a Resize, the
// capacity is a run-time condition rather than a constant of the program.
var ErrExceedsCapacity = errors.New("ctxsync: Weighted request exceeds capacity")

// MaxWeightedCapacity is the largest capacity a Weighted accepts:
// 1152921504606846975, that is 2⁶⁰-1, an eighth of math.MaxInt64. NewWeighted
// and Resize panic above it.
const MaxWeightedCapacity = 1<<60 - 1

// MaxWeightedCapacity leaves headroom in Weighted.state: the free units sit
// above weightedShift low bits, and two bits more keep a Release, which adds
// before it checks, from carrying a full count into the sign bit. This fails
// to compile if the two disagree.
var _ = [1]struct{}{}[MaxWeightedCapacity-(1<<(62-weightedShift)-1)]

// The low bits of Weighted.state; the free units are state >> weightedShift.
const (
	weightedWaiters  = 1 << iota // goroutines are queued
	weightedResizing             // Resize is at work
	weightedShift    = iota

	// maxFastWeight is the largest n that the fast path of Acquire takes out
	// of the state before it checks, and of Release adds to it. The free
	// units never exceed MaxWeightedCapacity but by what Releases of more
	// than held add for a moment before their checks take it back: at most
	// 2**32 each, where 2**60 each would carry two of them into the sign
	// bit. The free units are never below
	// -MaxWeightedCapacity (a Resize to 0 with everything held), so the state
	// is at least -2**62, and a failing fast path takes at most 2**34 out of
	// it for a moment: it would take 2**28 goroutines, all between their two
	// Adds at once, to wrap it past -2**63. Larger requests take the slow
	// path, which checks before it takes.
	maxFastWeight = 1 << 32
)

// A Weighted is a semaphore of capacity units, of which each Acquire takes n.
// It bounds a shared budget (bytes of memory, connections, CPU shares) among
// requests of different sizes.
//
// Use NewWeighted; the zero Weighted has capacity 0. A Weighted must not be
// copied after first use. A Weighted is safe for concurrent use by multiple
// goroutines.
//
// Waiters are served strictly first in, first out. A large request at the head
// of the queue is not starved by small ones behind it: they wait for it even
// when they would fit. A newcomer, TryAcquire included, never overtakes anyone
// queued.
//
// In the terminology of the Go memory model, a call to Release is synchronized
// before the return of any Acquire or TryAcquire that takes the units it freed.
type Weighted struct {
	_ nocopy.NoCopy

	// state is the free units << weightedShift | the flag bits. The free units
	// go negative after a Resize below what is held.
	//
	// The fast path of Acquire takes its units with one atomic Add, whatever
	// the state, and keeps them only if the result shows both flags clear and
	// the free units not negative. Otherwise it adds them back at once (see
	// giveBack): for that moment its units are missing from the state, as if
	// the goroutine had queued for them and left. Everything else reads the
	// state knowing that it may be short by such units, never over: a check
	// that finds too few free units may be wrong, one that finds enough is
	// not, and the giveBack that ends the moment wakes any waiter it held up.
	// Release adds its units with one atomic Add whatever the flags, and if
	// it finds one set it locks q to wake the waiters that now fit. The other
	// paths that take units do so by CAS, and only with both flags clear or
	// with q locked. The flags change only with q locked. Nothing changes
	// the state by Store, so as not to lose an Add. The waiters bit is set
	// exactly when q is not empty.
	state atomic.Int64

	// capacity changes only with q locked and the resizing bit set, so a fast
	// path that sees both flags clear reads a capacity consistent with state.
	capacity atomic.Int64

	// resizes counts the starts and ends of Resizes: odd while one is at
	// work, not zero once Resize has been called (see ErrExceedsCapacity).
	// Release reads it before its Add and again after it reads the
	// capacity: if it is even and unchanged, no Resize started or ended in
	// between, and the capacity it read was the capacity at its Add.
	resizes atomic.Uint64

	q waitq.Queue[int64] // the waiters, valued at their n; its lock guards the slow paths and Resize
}

// tooLarge is the value granted to a queued waiter that a shrink made too large.
const tooLarge = -1

// NewWeighted returns a Weighted with capacity units, all of them free.
//
// NewWeighted panics if capacity is negative or above MaxWeightedCapacity.
func NewWeighted(capacity int64) *Weighted {
	checkCapacity(capacity, "NewWeighted")
	w := new(Weighted)
	w.capacity.Store(capacity)
	w.state.Store(capacity << weightedShift)
	return w
}

func checkCapacity(capacity int64, fn string) {
	if capacity < 0 {
		panic("ctxsync: " + fn + " with negative capacity")
	}
	if capacity > MaxWeightedCapacity {
		panic("ctxsync: " + fn + " capacity above MaxWeightedCapacity")
	}
}

// Acquire takes n units, waiting if needed until they are free, after the
// goroutines already waiting, or until ctx is done. Acquire of 0 units waits
// only for the goroutines queued before it, and, after a Resize below the
// units held, until they are back within the capacity (see Resize): no
// request is admitted while Available is negative.
//
// On failure it returns ctx.Err() and w is left as it was: a ctx that is
// already done fails even when the units are free. If the units are handed over
// at the same moment that ctx ends, Acquire either returns nil holding them or
// passes them on and returns ctx.Err(); they are never lost.
//
// Acquire panics if n is negative, or if n is larger than the capacity of a
// Weighted that has never been resized (such a request could never be met).
// Once Resize has been called, a request larger than the current capacity is
// instead refused with ErrExceedsCapacity, at once or when a shrink leaves it
// too large while it waits.
func (w *Weighted) Acquire(ctx context.Context, n int64) (err error) {
	// The fast path takes first and looks after: one atomic Add costs less
	// than a load and a CAS. It leaves the capacity alone: the free units
	// never exceed it, so a request that they cover is a valid one.
	if uint64(n) <= maxFastWeight && ctx != nil && ctx.Err() == nil {
		// A result not negative with no flag: n units were free and nobody
		// was queued or resizing, so they are ours, unless ctx has ended
		// since: it is looked at before the take and after it (see
		// Lock.Lock). The deferred call gives the units back if ctx.Err
		// panics (see Semaphore.Acquire); made here rather than in a
		// function of its own, it saves a call on the hottest path.
		if s := w.state.Add(-n << weightedShift); s >= 0 && s&(weightedWaiters|weightedResizing) == 0 {
			kept := false
			defer func() {
				if !kept {
					w.giveBack(n)
				}
			}()
			if err = ctx.Err(); err == nil {
				kept = true
			}
			return err
		}
		w.giveBack(n)
	}
	return w.acquireSlow(ctx, n)
}

// giveBack puts back the n units that a fast-path Acquire took but could not
// keep. While they were out, a Release, a Resize or a waiter that gave up may
// have found too few units free to wake the head of the queue; if anyone is
// queued, giveBack wakes the waiters that fit now that the units are back.
func (w *Weighted) giveBack(n int64) {
	if w.state.Add(n<<weightedShift)&weightedWaiters == 0 {
		// Nobody is queued, so nobody was held up; and whoever queues
		// from now on does so by a CAS on a state with the units back.
		return
	}
	w.q.Lock()
	if w.state.Load()&weightedWaiters != 0 {
		w.notifyLocked()
	}
	w.q.Unlock()
}

// checkRequest panics on a request that is a bug, and returns
// ErrExceedsCapacity for one that is too large only because of a Resize.
func (w *Weighted) checkRequest(n int64) error {
	if n < 0 {
		panic("ctxsync: Weighted.Acquire of negative weight")
	}
	if n > w.capacity.Load() {
		if w.resizes.Load() != 0 {
			return ErrExceedsCapacity
		}
		panic("ctxsync: Weighted.Acquire of more than its capacity")
	}
	return nil
}

func (w *Weighted) acquireSlow(ctx context.Context, n int64) error {
	if err := w.checkRequest(n); err != nil {
		return err
	}
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	if n > maxFastWeight && w.TryAcquire(n) {
		return w.keep(ctx, n) // too large for the fast path's Add, which this replaces
	}
	if waitq.Pause(); w.TryAcquire(n) {
		return w.keep(ctx, n)
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	w.q.Lock()
	if n > w.capacity.Load() { // a Resize shrank it since checkRequest looked
		w.q.Unlock()
		return ErrExceedsCapacity
	}
	for {
		s := w.state.Load()
		if s&weightedWaiters == 0 && s>>weightedShift >= n {
			// Nobody is queued (the resizing bit cannot be set: Resize
			// holds the lock while it is).
			if w.state.CompareAndSwap(s, s-n<<weightedShift) {
				w.q.Unlock()
				return w.keep(ctx, n)
			}
			continue
		}
		if s&weightedWaiters != 0 || w.state.CompareAndSwap(s, s|weightedWaiters) {
			break
		}
	}
	node := w.q.PushDone(done, n)
	w.q.Unlock()

	if v, ok := w.q.Wait(done, node); ok {
		if v == tooLarge {
			return ErrExceedsCapacity
		}
		return nil
	}

	w.q.Lock()
	v, granted, front := w.q.Cancel(node)
	switch {
	case granted && v != tooLarge:
		// The units arrived as ctx ended: give them back, waking whoever fits.
		w.releaseLocked(n)
	case granted:
		// A Resize refused us as ctx ended, and settled the queue and the
		// waiters bit as it took us out: there is nothing to give back. The
		// bit may be clear already, and the fast paths running again.
	case front:
		// The head of the queue gave up. Those behind it were waiting for it,
		// not for units: wake the ones that fit now (x/sync's golang/go#37852).
		w.notifyLocked()
	case w.q.Len() == 0:
		// The last waiter left: the bit, set while we were queued, goes. (If
		// a grant dropped us for our ended ctx and emptied the queue, it
		// cleared the bit itself.)
		w.clearWaitersLocked()
	}
	w.q.Unlock()
	return waitq.DoneErr(ctx)
}

// keep settles n units that acquireSlow took by itself, after the caller's ctx
// was first checked: if ctx has ended since, the units may have been freed
// after the ctx ended, and a caller whose ctx ended must not get them. They
// are given back, and keep returns ctx.Err().
//
// The look is the caller's code, and may panic: the units are then given
// back too (by the deferred call), so that the panic loses none.
func (w *Weighted) keep(ctx context.Context, n int64) (err error) {
	kept := false
	defer func() {
		if !kept {
			w.q.Lock()
			w.releaseLocked(n)
			w.q.Unlock()
		}
	}()
	if err = ctx.Err(); err == nil {
		kept = true
	}
	return err
}

// TryAcquire takes n units if they are free and nobody is waiting, and reports
// whether it did. It never waits. It panics as Acquire does, and returns false
// where Acquire would return ErrExceedsCapacity.
//
// A goroutine whose Acquire is finding that its units are not all free counts,
// for that moment, as waiting: TryAcquire may fail then, as it would behind a
// queued waiter, even if that goroutine then returns to try again later.
//
// A TryAcquire that finds its units free while someone is queued looks at
// the queue, as a Release does, to skip the waiters whose ctx has ended and
// serve those that fit: like a Release, it must not be made outside a
// testing/synctest bubble while a goroutine inside waits (see the package
// doc).
func (w *Weighted) TryAcquire(n int64) bool {
	if w.checkRequest(n) != nil {
		return false
	}
	looked := false
	for {
		s := w.state.Load()
		if s&weightedResizing != 0 {
			// Rare: wait out the Resize, which holds the lock, and look again.
			w.q.Lock()
			s = w.state.Load()
			w.q.Unlock()
		}
		if s>>weightedShift < n {
			return false
		}
		if s&weightedWaiters != 0 {
			// The units are free, yet someone is queued: a waiter at the
			// head that needs more, whom we must not overtake; or waiters
			// whose ctx has ended, who hold the flag until their
			// goroutines run again. Look once, if the lock is free (a
			// TryAcquire does not wait): the look drops those, grants
			// whoever fits, and clears the flag if nobody is left.
			if looked || !w.q.TryLock() {
				return false
			}
			looked = true
			if w.state.Load()&weightedWaiters != 0 {
				w.notifyLocked()
			}
			w.q.Unlock()
			continue
		}
		if w.state.CompareAndSwap(s, s-n<<weightedShift) {
			return true
		}
	}
}

// Release gives n units back, waking the waiters at the head of the queue that
// now fit.
//
// Release panics if n is negative or more than is held, against the capacity
// in force when it gives the units back, whatever Resize does meanwhile. The
// units held are counted together, whoever holds them: a Release by a
// goroutine that does not hold n units, made while others hold them, cannot
// be told from theirs, and the misuse shows later, if at all, as a Release
// that finds more units free than the capacity and panics.
//
// A Release of up to 2³² units adds them before it checks, and two windows
// can hide an over-release from that check. If it adds them while a Resize
// is at work, it checks once the Resize is done; an Acquire that takes, in
// between, the units it gave back beyond what was held hides the misuse, and
// Release returns (those units are never granted to a waiter). And if it adds
// them while an Acquire that finds too few units free has taken its units out
// of the count for a moment, before it gives them back, the check finds the
// free units short by those, and Release returns: the units it gave back
// beyond what was held stay free, to be taken by a later Acquire, and the
// misuse shows later, if at all, as above.
func (w *Weighted) Release(n int64) {
	if uint64(n) <= maxFastWeight {
		// Add first and check after: the free units can exceed the capacity
		// only if more was released than held. The capacity compared is
		// the one at the Add: read after it, between two reads of resizes
		// that show no Resize started or ended. (Read before the Add, it
		// could be one that a whole Resize changed meanwhile.) n is at most
		// maxFastWeight so that Adds of more than held, racing, cannot carry
		// the state into its sign bit before their checks take them back
		// (see maxFastWeight); larger ones are checked before they add.
		r := w.resizes.Load()
		s := w.state.Add(n << weightedShift)
		c := w.capacity.Load()
		stable := r&1 == 0 && w.resizes.Load() == r
		if s&(weightedWaiters|weightedResizing) == 0 && s>>weightedShift <= c && stable {
			return
		}
		w.releaseSlow(n, s, c, stable)
		return
	}
	w.releaseChecked(n) // negative, or large: checked before it adds
}

// releaseSlow finishes a Release of n units, which it has added to the state:
// s is the state right after, and if stable, c the capacity at that Add.
// releaseSlow undoes the Add and panics if they were more than held, and
// otherwise wakes the waiters that now fit.
func (w *Weighted) releaseSlow(n, s, c int64, stable bool) {
	w.q.Lock()
	var over bool
	if stable {
		// s and c are of one moment: s tells exactly.
		over = s>>weightedShift > c
	} else {
		// A Resize was at work around our Add, and is done now that we
		// hold the lock. The Adds to the state commute, and releases never
		// raise the free units above the capacity: if they are above it,
		// units were released that nobody held. The units a Release adds
		// beyond the capacity are never granted to a waiter (see
		// notifyLocked), but a fast-path Acquire may take them between
		// the end of the Resize and our lock: then this misses the
		// over-release. It never panics when nothing was over-released.
		over = w.state.Load()>>weightedShift > w.capacity.Load()
	}
	if over {
		w.state.Add(-n << weightedShift)
		w.panicOverRelease()
	}
	if w.state.Load()&weightedWaiters != 0 {
		w.notifyLocked()
	}
	w.q.Unlock()
}

// releaseChecked is Release for an n that may be invalid, or too large to add
// before it is checked: it checks n against what is held with the capacity
// stable, before it adds.
func (w *Weighted) releaseChecked(n int64) {
	if n < 0 {
		panic("ctxsync: Weighted.Release of negative weight")
	}
	w.q.Lock()
	w.releaseLocked(n)
	w.q.Unlock()
}

func (w *Weighted) panicOverRelease() {
	w.q.Unlock()
	panic("ctxsync: Weighted.Release of more than held")
}

// releaseLocked gives n units back and wakes those that now fit. w.q must be
// locked, so the capacity is stable.
func (w *Weighted) releaseLocked(n int64) {
	c := w.capacity.Load()
	for {
		s := w.state.Load()
		if n > c-s>>weightedShift {
			w.panicOverRelease()
		}
		if w.state.CompareAndSwap(s, s+n<<weightedShift) {
			if s&weightedWaiters != 0 {
				w.notifyLocked()
			}
			return
		}
	}
}

// notifyLocked grants units to waiters from the head of the queue while the
// head fits, then clears the waiters bit if the queue is empty. w.q must be
// locked and a flag set, so that no fast-path Acquire takes units meanwhile.
func (w *Weighted) notifyLocked() {
	c := w.capacity.Load() // stable: q is locked
	for {
		// Load the state before looking for the head: Front drops waiters
		// whose ctx has ended, and must see the end of a ctx that came
		// before the units that the state shows.
		s := w.state.Load()
		node := w.q.Front()
		if node == nil {
			break
		}
		n := node.Val
		// Free units beyond the capacity were released by a Release of
		// more than held, between its Add and its check, which will take
		// them back and panic: they are not granted.
		if min(s>>weightedShift, c) < n {
			// Stop at the first waiter that does not fit, even if smaller ones
			// behind it would: letting them pass could starve a large request
			// forever under a steady stream of small ones.
			break
		}
		// With a flag set, nothing but the lock holder takes units for
		// good: Releases may add units, and fast-path Acquires take some
		// for a moment and give them back. The units are still free.
		w.state.Add(-n << weightedShift)
		w.q.Grant(node, n)
	}
	if w.q.Len() == 0 {
		w.clearWaitersLocked()
	}
}

// clearWaitersLocked clears the waiters bit if it is set. w.q must be locked
// and empty.
func (w *Weighted) clearWaitersLocked() {
	for {
		s := w.state.Load()
		if s&weightedWaiters == 0 || w.state.CompareAndSwap(s, s&^weightedWaiters) {
			return
		}
	}
}

// Resize changes the capacity to capacity units. Growing it wakes the waiters
// that now fit. Shrinking it below the units held takes effect as holders
// release: until then Available is negative and nobody is admitted. Waiters that
// ask for more than the new capacity are refused with ErrExceedsCapacity.
//
// Resize panics if capacity is negative or above MaxWeightedCapacity.
func (w *Weighted) Resize(capacity int64) {
	checkCapacity(capacity, "Weighted.Resize")
	w.q.Lock()
	defer w.q.Unlock()
	w.resizes.Add(1) // odd: at work (see resizes)
	defer w.resizes.Add(1)
	// Stop the fast paths, so that they never pair the new capacity with the
	// old state or the other way around.
	var s int64
	for {
		s = w.state.Load()
		if w.state.CompareAndSwap(s, s|weightedResizing) {
			break
		}
	}
	old := w.capacity.Swap(capacity)
	w.state.Add((capacity - old) << weightedShift)
	if capacity < old {
		for node := w.q.Front(); node != nil; {
			next := w.q.Next(node)
			if node.Val > capacity {
				w.q.Grant(node, tooLarge)
			}
			node = next
		}
	}
	w.notifyLocked()
	w.state.Add(-weightedResizing)
}

// Capacity returns the current capacity.
func (w *Weighted) Capacity() int64 { return w.capacity.Load() }

// Available returns the number of free units at the moment of the call. It is
// negative while a Resize below the units held waits for them to be released.
// Like TryAcquire, it counts the units of an Acquire that is finding that they
// are not all free as taken, for that moment.
func (w *Weighted) Available() int64 {
	a := w.state.Load() >> weightedShift
	if a < 0 && w.resizes.Load() == 0 {
		// Only the moment above: without a Resize nothing is owed.
		return 0
	}
	return a
}

// Waiting returns the number of goroutines queued in Acquire at the moment of
// the call.
func (w *Weighted) Waiting() int {
	w.q.Lock()
	defer w.q.Unlock()
	return w.q.Len()
}
