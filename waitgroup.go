package ctxsync

import (
	"context"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// The state word of a WaitGroup: the counter in the high 32 bits, as a signed
// number (its bound is sync.WaitGroup's); below it the epoch, and in the lowest
// bit the waiters flag.
const (
	wgWaiters   = 1             // goroutines are queued in Wait for this epoch
	wgEpoch     = 2             // one epoch (see WaitGroup.state)
	wgEpochMask = 1<<32 - 2     // the epoch bits
	wgCountBits = 32            // the shift of the counter
	wgMinDelta  = math.MinInt32 // the lowest delta any counter can take
	wgMaxDelta  = math.MaxInt32 // the highest

	wgNegative = "ctxsync: negative WaitGroup counter"
	wgOverflow = "ctxsync: WaitGroup counter overflow"
	wgNilFunc  = "ctxsync: WaitGroup.Go of a nil func"

	wgWaitYields = 2 // how many times Wait yields before it queues
)

// A WaitGroup waits for a collection of goroutines or tasks to finish, as
// sync.WaitGroup does, and its Wait takes a context so that the waiter can give
// up. Add and Done count tasks in and out; Go starts a goroutine and counts it;
// Wait returns once the counter has been zero at some moment after Wait began.
//
// The zero WaitGroup has a counter of zero and is ready to use. A WaitGroup
// must not be copied after first use. A WaitGroup is safe for concurrent use by
// multiple goroutines.
//
// Unlike sync.WaitGroup, Add with a positive delta may be called at any time,
// also while goroutines wait and when the counter is zero: a Wait that began
// before returns once the counter is zero again, or has been since it began.
// So a WaitGroup may be reused without waiting for every Wait to return.
//
// In the terminology of the Go memory model, a call to Done (or an Add that
// brings the counter to zero) is synchronized before the return of any Wait
// call that it unblocks, and the return of a function started by Go is
// synchronized before the return of any Wait call that it unblocks.
type WaitGroup struct {
	_ nocopy.NoCopy

	// state is the counter (high 32 bits, signed) | the epoch | the waiters
	// flag. Add changes the counter with one atomic add, and when it brings
	// it to zero with the flag clear, that is all it does.
	//
	// A waiter queues under q's lock, by a CAS that sets the flag on a
	// nonzero counter, and remembers the epoch it saw. The Add that brings
	// the counter to zero with the flag set moves the epoch on and clears the
	// flag, in one CAS, and then wakes every waiter of the epochs up to the
	// one it ended. Those waiters queued while the counter was above zero and
	// before the zero, so the counter has been zero since their Wait began.
	// A waiter that queued after the zero (the counter having risen again)
	// carries the new epoch and waits for the next zero: that is why the
	// epoch exists. Without it, a zero that came before a Wait began could
	// wake it, if the counter rose again before the Wait queued. The last
	// waiter to give up clears the flag and moves the epoch on too, for the
	// same reason (see waitSlow).
	state atomic.Uint64

	q waitq.Queue[uint64] // the waiters, each with its epoch
}

// Add adds delta, which may be negative, to the counter. If the counter
// becomes zero, every goroutine blocked in Wait is released. A positive delta
// may be added at any time, also while goroutines wait.
//
// Add panics if the counter would go below zero ("ctxsync: negative WaitGroup
// counter", as sync.WaitGroup does) or above math.MaxInt32 ("ctxsync:
// WaitGroup counter overflow", where sync.WaitGroup wraps), and leaves the
// counter as it was.
func (wg *WaitGroup) Add(delta int) {
	if delta < wgMinDelta || delta > wgMaxDelta {
		wg.addOutOfRange(delta)
	}
	// A CAS from the state loaded, not an add then a check: a delta that
	// would take the counter out of range panics before anyone can see
	// it, so a misused Add never makes another goroutine's Done panic, a
	// Wait return, or a Done skip its wake-up.
	for {
		s := wg.state.Load()
		if s&wgWaiters != 0 && int32(s>>wgCountBits) == 0 && delta > 0 {
			// A zero whose Add has yet to wake its waiters: finish its
			// wake-up before raising the counter. Otherwise a Wait that
			// begins after the rise would find the flag set and the epoch
			// of that zero, queue under it, and be woken by a zero that
			// came before it began.
			wg.wake(s)
			continue
		}
		c := int64(int32(s>>wgCountBits)) + int64(delta)
		if c < 0 {
			panic(wgNegative)
		}
		if c > math.MaxInt32 {
			panic(wgOverflow)
		}
		n := s + uint64(delta)<<wgCountBits
		if !wg.state.CompareAndSwap(s, n) {
			continue
		}
		if c > 0 || n&wgWaiters == 0 {
			return // the common case: nobody to wake
		}
		wg.wake(n)
		return
	}
}

// addOutOfRange panics for a delta that no counter could take, before Add
// touches the counter: one that goes below zero by itself, or above the bound.
func (wg *WaitGroup) addOutOfRange(delta int) {
	if delta < 0 {
		panic(wgNegative)
	}
	panic(wgOverflow)
}

// wake moves the epoch of s on, if no other Add has, and wakes the waiters of
// that epoch and earlier ones. s is the state left by an Add that brought the
// counter to zero with the waiters flag set.
//
// The counter may have risen again since: the waiters that queued before this
// zero are woken all the same, since the counter was zero after they began.
// If another Add has moved the epoch on already (one that zeroed the counter,
// or the one that raised it from this zero, which wakes them first), it
// wakes them; waiters that queued since carry a later epoch, and queued after
// this zero, so this Add has nobody to wake.
func (wg *WaitGroup) wake(s uint64) {
	epoch := s & wgEpochMask
	for s&wgWaiters != 0 && s&wgEpochMask == epoch {
		if wg.state.CompareAndSwap(s, nextEpoch(s)) {
			wg.q.Lock()
			// The queue is in epoch order, since waiters queue under the
			// lock and the epoch only moves on.
			for w := wg.q.Front(); w != nil && epochNotAfter(w.Val, epoch); w = wg.q.Front() {
				wg.q.Grant(w, w.Val)
			}
			wg.q.Unlock()
			return
		}
		s = wg.state.Load()
	}
}

// nextEpoch returns s with the epoch moved on by one and the waiters flag
// clear.
func nextEpoch(s uint64) uint64 {
	return s&^(wgEpochMask|wgWaiters) | (s&wgEpochMask+wgEpoch)&wgEpochMask
}

// epochNotAfter reports whether epoch a is b or an earlier one. Epochs wrap
// after 2³¹ zeros; the queue never holds epochs more than a few apart, so the
// difference, read as signed, orders them.
func epochNotAfter(a, b uint64) bool {
	return int32(uint32(b-a)) >= 0
}

// Done decrements the counter by one. It is the same as Add(-1), and panics as
// Add does if the counter would go below zero.
func (wg *WaitGroup) Done() {
	wg.Add(-1)
}

// Go calls f in a new goroutine and counts it in the WaitGroup: Add(1) before
// the goroutine starts, and Done when f returns, as sync.WaitGroup.Go does.
// Go may be called at any time, also by a goroutine that Go started.
//
// If f ends with runtime.Goexit, the task is done all the same, also when a
// deferred call of f calls Goexit while f panics (the Goexit ends the panic,
// and the program goes on). If f panics, the panic crashes the program, as
// any goroutine's does, and the task is not counted done: a Wait must not
// return, and let the program carry on or exit, while the panic is on its way
// (sync.WaitGroup.Go does the same since Go 1.26). Go panics if f is nil,
// before it counts anything.
func (wg *WaitGroup) Go(f func()) {
	if f == nil {
		panic(wgNilFunc)
	}
	wg.Add(1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				panic(v) // fatal in this goroutine; Done is not called
			}
			wg.Done() // f returned, or called runtime.Goexit
		}()
		f()
	}()
}

// Wait blocks until the counter has been zero at some moment since Wait was
// called, or ctx is done. It returns nil at once if the counter is zero. An
// Add that raises the counter right after it reached zero does not take that
// back: the Waits that began before the zero return nil.
//
// On failure it returns ctx.Err(); a ctx that is already done fails even when
// the counter is zero. A Wait that fails leaves nothing behind: no goroutine
// and no place in a queue. Waiting consumes nothing, so a zero that coincides
// with the end of ctx wakes every other waiter all the same.
//
// Wait panics if ctx is nil.
func (wg *WaitGroup) Wait(ctx context.Context) error {
	if ctx == nil {
		waitq.PanicNilCtx("ctxsync")
	}
	// Load the counter before looking at ctx: a zero seen then came while
	// ctx was alive, and counts. Looked at the other way round, a zero that
	// came after ctx ended (a Done racing a cancel) would make Wait succeed
	// for a caller that had already given up.
	s := wg.state.Load()
	if err := ctx.Err(); err != nil {
		return err
	}
	if int32(s>>wgCountBits) <= 0 {
		return nil
	}
	return wg.waitSlow(ctx)
}

func (wg *WaitGroup) waitSlow(ctx context.Context) error {
	// Yield before queueing: the goroutines a Wait waits for have often
	// just been started by Go and are runnable, and a yield puts the waiter
	// behind them, so that it finds them done without the cost of a place
	// in the queue and a wake-up. When they take longer it costs a few
	// yields per Wait, which waitq's alone waiter pays too.
	for range wgWaitYields {
		runtime.Gosched()
		if int32(wg.state.Load()>>wgCountBits) <= 0 {
			return ctx.Err() // the zero counts only if ctx is alive now (see Wait)
		}
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	wg.q.Lock()
	var epoch uint64
	for {
		s := wg.state.Load()
		if int32(s>>wgCountBits) <= 0 {
			// Zero since Wait looked, perhaps after ctx ended: it counts
			// only if ctx is alive now (see Wait). Failing then consumes
			// nothing that others could have had.
			wg.q.Unlock()
			return ctx.Err()
		}
		// Set the flag with the counter above zero, so that the Add that
		// zeroes it takes the slow path and wakes us.
		if s&wgWaiters != 0 || wg.state.CompareAndSwap(s, s|wgWaiters) {
			epoch = s & wgEpochMask
			break
		}
	}
	w := wg.q.PushDone(done, epoch)
	wg.q.Unlock()

	if _, ok := wg.q.Wait(done, w); ok {
		return nil
	}

	wg.q.Lock()
	_, woken, _ := wg.q.Cancel(w)
	if !woken && wg.q.Len() == 0 {
		// The last waiter gave up: clear the flag, so that the next zero
		// costs one atomic add again. Waiters set it only with q locked, so
		// none is about to rely on it.
		// Move the epoch on too, as a zero would: an Add that zeroed the
		// counter before and has yet to look at the flag must not wake a
		// waiter that queues after this, under the same epoch, after that
		// zero.
		for s := wg.state.Load(); s&wgWaiters != 0; s = wg.state.Load() {
			if wg.state.CompareAndSwap(s, nextEpoch(s)) {
				break
			}
		}
	}
	wg.q.Unlock()
	if woken {
		// The counter reached zero before ctx ended (a waiter whose ctx
		// ended first is never woken; see waitq.List.Front): that is the
		// answer the caller waited for.
		return nil
	}
	return waitq.DoneErr(ctx)
}

// Count returns the counter at the moment of the call: the tasks added and not
// yet done. For metrics and tests; it may be stale by the time the caller looks
// at it.
func (wg *WaitGroup) Count() int {
	return int(int32(wg.state.Load() >> wgCountBits))
}
