package ctxsync

import (
	"context"
	"sync/atomic"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// RWLock.state is readers*rwReader | releases*rwRelease | rwWriter | rwWaiters.
const (
	rwWriter  = 1 << iota // a writer holds the lock
	rwWaiters             // goroutines are queued
	rwRelease             // one release by a writer, counted in the bits up to rwReader

	// rwReader is one reader. The count fills the high 32 bits, so that an
	// RUnlock too many sets the sign bit, and adding or removing readers
	// never touches the releases below.
	rwReader = 1 << 32

	// rwReleases masks the count of releases, which wraps within its bits.
	rwReleases = rwReader - rwRelease

	// rwMaxReaders is the most readers let in at once; the next wait until
	// one leaves. The count of readers must stay clear of the sign bit,
	// which an RUnlock too many sets, and phantoms (see RWLock.state) add
	// to it for a moment beyond the readers in: the 2³⁰ below the sign bit
	// leave room for them.
	rwMaxReaders = 1 << 30

	// rwFull is the state with rwMaxReaders readers and nothing below: a
	// state below it, taken as unsigned, has room for one reader more.
	rwFull = rwMaxReaders * rwReader
)

// An RWLock is a reader/writer lock whose waits take a context: any number of
// readers, or one writer, may hold it.
//
// It is fair to both sides. It prefers writers: once a writer waits, readers
// that come after it wait too, so a steady stream of readers cannot starve it.
// And it is first in, first out: when a writer unlocks, every reader queued
// before the next writer enters at once, so writers cannot starve readers
// either. A writer that gives up lets in the readers queued behind it.
//
// At most 2³⁰ readers hold it at once; more wait until one leaves.
//
// The zero RWLock is unlocked and ready to use. An RWLock must not be copied
// after first use. An RWLock is safe for concurrent use by multiple goroutines.
//
// In the terminology of the Go memory model, the n'th call to Unlock is
// synchronized before the m'th call to Lock for any n < m, just as for
// sync.RWMutex; and for any call to RLock, there is an n such that the n'th
// call to Unlock is synchronized before that call to RLock, and the matching
// call to RUnlock is synchronized before the n+1'th call to Lock.
type RWLock struct {
	_ nocopy.NoCopy

	// state counts readers and writers' releases, and holds the writer and
	// waiters bits.
	//
	// RLock adds a reader without looking first, as sync.RWMutex does: an
	// atomic add never fails, where a compare-and-swap fails whenever another
	// core's reader got there first. If the sum shows a writer or a queue,
	// the reader did not enter: it is a phantom, which removes itself with q
	// locked and then re-runs dispatch, since a phantom may have stopped a
	// dispatch from admitting a writer. Because phantoms come and go without
	// the lock, every change made with q locked is an atomic add too, never a
	// store.
	//
	// The waiters bit is set exactly when q is not empty, and changes only
	// with q locked; it is set by a compare-and-swap against the state that
	// made the caller queue. The writer bit is set by the fast path only
	// with no reader, writer or waiter.
	//
	// Each clearing of the writer bit moves the count of releases on, in
	// the same atomic step (see release). It lets RLock look at ctx once:
	// RLock loads the state, looks at ctx, then adds itself; if neither
	// state shows a writer and the count is unchanged, no writer held the
	// lock at any moment between the load and the add, so the reader
	// entered a lock that was free for it from before the look, not one
	// freed after ctx ended (see Lock.Lock). The count wraps after 2³⁰
	// releases, and wraps counts them.
	state atomic.Int64

	q waitq.Queue[bool] // the waiters, true for a writer; its lock also guards the slow paths

	// wraps counts the wraps of the count of releases in state. 2³⁰
	// releases take seconds, and a reader can spend that long between its
	// load and its add: in ctx.Err, the caller's code. The count would then
	// be back where the reader loaded it, and the reader would enter a lock
	// freed after its ctx ended. So RLock loads wraps before its load of
	// state and again after its add, and looks at ctx once only if neither
	// moved. A release that wraps the count adds to wraps first, while its
	// writer still holds the lock. If the reader's load of state showed no
	// writer, that writer took the lock after it, so its add to wraps comes
	// after the reader's first load of wraps, and before the reader's add,
	// which follows the release: the second load sees it.
	//
	// It comes after q, over 64 bytes from state: it changes once in 2³⁰
	// releases, and, apart from state's cache line, which every RLock and
	// RUnlock writes, its loads in RLock find it in the core's own cache.
	wraps atomic.Uint64
}

// NewRWLock returns a new, unlocked RWLock. It is the same as new(RWLock).
func NewRWLock() *RWLock { return new(RWLock) }

// readers returns the number of readers in state s, phantoms included.
func readers(s int64) int64 { return s / rwReader }

// released returns state s with the writer bit cleared and the count of
// releases moved on.
func released(s int64) int64 {
	return s&^(rwWriter|rwReleases) | (s+rwRelease)&rwReleases
}

// releasing returns released(s), the state that a writer's release of state
// s stores. If that wraps the count of releases, it counts the wrap first (see
// wraps).
func (rw *RWLock) releasing(s int64) int64 {
	if s&rwReleases == rwReleases {
		rw.wraps.Add(1)
	}
	return released(s)
}

// release clears the writer bit. Phantom readers add and remove themselves
// meanwhile, so it takes a compare-and-swap loop.
func (rw *RWLock) release() {
	for {
		s := rw.state.Load()
		if rw.state.CompareAndSwap(s, rw.releasing(s)) {
			return
		}
	}
}

// RLock locks rw for reading, waiting if needed until no writer holds or waits
// for it ahead of the caller, or until ctx is done.
//
// On failure it returns ctx.Err() and rw is left as it was; a ctx that is
// already done fails even when rw is free. If the lock is handed over at the
// same moment that ctx ends, RLock either returns nil holding it or passes it
// on and returns ctx.Err().
func (rw *RWLock) RLock(ctx context.Context) error {
	// Look at ctx before the take, so that a done ctx changes nothing. The
	// state is loaded before the look: if no writer released the lock
	// between the load and the take, one look is enough (see state).
	// Otherwise rkeep looks again after the take, and unlocks if ctx has
	// ended or ctx.Err panics (see Semaphore.Acquire).
	if ctx == nil {
		waitq.PanicNilCtx("ctxsync")
	}
	n := rw.wraps.Load() // before the state (see wraps)
	s := rw.state.Load()
	if s&(rwWriter|rwWaiters) != 0 {
		return rw.rlockWait(ctx) // no use adding a phantom
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if t := rw.state.Add(rwReader); t&(rwWriter|rwWaiters) == 0 && uint64(t) < rwFull+rwReader {
		if (t^s)&rwReleases == 0 && rw.wraps.Load() == n {
			return nil
		}
		return rw.rkeep(ctx)
	}
	return rw.rlockSlow(ctx)
}

// rlockWait is RLock for a lock that a writer holds or waiters queue for.
func (rw *RWLock) rlockWait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	rw.q.Lock()
	return rw.queueLocked(ctx, done, false)
}

// rlockSlow runs for a phantom reader: it removes itself, then enters or
// queues. It looks at ctx with nothing counted and no lock held: ctx is the
// caller's code (see waitq.Ended).
func (rw *RWLock) rlockSlow(ctx context.Context) error {
	rw.q.Lock()
	rw.state.Add(-rwReader)
	rw.dispatchLocked() // our phantom may have held back a writer
	rw.q.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	done := ctx.Done()
	rw.q.Lock()
	return rw.queueLocked(ctx, done, false)
}

// TryRLock locks rw for reading if no writer holds it, nobody is waiting, and
// fewer than 2³⁰ readers hold it, and reports whether it did. It never waits.
func (rw *RWLock) TryRLock() bool {
	// A compare-and-swap, unlike RLock's add: a failed TryRLock must leave no
	// trace to clean up. A CAS lost to another reader retries.
	for {
		s := rw.state.Load()
		if s&(rwWriter|rwWaiters) != 0 || uint64(s) >= rwFull {
			return false
		}
		if rw.state.CompareAndSwap(s, s+rwReader) {
			return true
		}
	}
}

// RUnlock undoes one RLock. When the last reader leaves, a waiting writer
// takes the lock.
//
// RUnlock panics if rw is not locked for reading.
func (rw *RWLock) RUnlock() {
	// One test for both: goroutines queued, or (the sign bit) no reader.
	if s := rw.state.Add(-rwReader); uint64(s)&(1<<63|rwWaiters) != 0 {
		rw.runlockSlow(s)
	}
}

func (rw *RWLock) runlockSlow(s int64) {
	if s < 0 {
		rw.state.Add(rwReader)
		panic("ctxsync: RUnlock of RWLock not locked for reading")
	}
	// Goroutines are queued: perhaps a writer waiting for us to leave.
	rw.q.Lock()
	rw.dispatchLocked()
	rw.q.Unlock()
}

// Lock locks rw for writing, waiting if needed until no reader or writer holds
// it, after the goroutines already waiting, or until ctx is done.
//
// On failure it returns ctx.Err() and rw is left as it was; a ctx that is
// already done fails even when rw is free. If the lock is handed over at the
// same moment that ctx ends, Lock either returns nil holding it or passes it on
// and returns ctx.Err().
func (rw *RWLock) Lock(ctx context.Context) error {
	// Look at ctx before the take and after it (see RLock).
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	if rw.TryLock() {
		return rw.keep(ctx)
	}
	if waitq.Pause(); rw.TryLock() {
		return rw.keep(ctx)
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	rw.q.Lock()
	return rw.queueLocked(ctx, done, true)
}

// keep settles the write lock that Lock took by itself after its pause: freed,
// perhaps, after ctx ended, it is not ours to keep then (see queueLocked);
// nor if the look at ctx, the caller's code, panics, which the deferred call
// sees, so that the panic leaves nobody holding the lock.
func (rw *RWLock) keep(ctx context.Context) (err error) {
	kept := false
	defer func() {
		if !kept {
			rw.Unlock()
		}
	}()
	if err = ctx.Err(); err == nil {
		kept = true
	}
	return err
}

// rkeep is keep for a read lock that RLock took.
func (rw *RWLock) rkeep(ctx context.Context) (err error) {
	kept := false
	defer func() {
		if !kept {
			rw.RUnlock()
		}
	}()
	if err = ctx.Err(); err == nil {
		kept = true
	}
	return err
}

// TryLock locks rw for writing if nobody holds it or waits for it, and reports
// whether it did. It never waits. (A reader on its way in, which will find it
// locked and leave, can make it fail.)
func (rw *RWLock) TryLock() bool {
	s := rw.state.Load()
	return s&^rwReleases == 0 && rw.state.CompareAndSwap(s, s|rwWriter)
}

// Unlock unlocks rw for writing. Waiters at the head of the queue take it: the
// next writer, or every reader queued before the next writer.
//
// Unlock panics if rw is not locked for writing.
func (rw *RWLock) Unlock() {
	if s := rw.state.Load(); s&^rwReleases != rwWriter || !rw.state.CompareAndSwap(s, rw.releasing(s)) {
		rw.unlockSlow()
	}
}

func (rw *RWLock) unlockSlow() {
	rw.q.Lock()
	if rw.state.Load()&rwWriter == 0 {
		rw.q.Unlock()
		panic("ctxsync: Unlock of RWLock not locked for writing")
	}
	rw.release()
	rw.dispatchLocked()
	rw.q.Unlock()
}

// queueLocked takes the lock if nobody is queued and it is free for the
// caller, or queues the caller and waits. done is ctx.Done(), read before
// rw.q was locked. rw.q must be locked; queueLocked unlocks it.
func (rw *RWLock) queueLocked(ctx context.Context, done <-chan struct{}, writer bool) error {
	for {
		s := rw.state.Load()
		if s&rwWaiters != 0 {
			break // others are queued: join them
		}
		free := s&^rwReleases == 0 // for a writer
		if !writer {
			free = s&rwWriter == 0 && uint64(s) < rwFull
		}
		if free {
			next := s | rwWriter
			if !writer {
				next = s + rwReader
			}
			if rw.state.CompareAndSwap(s, next) {
				if waitq.Ended(done) {
					// ctx was checked before we locked; the lock may have
					// been freed since, after ctx ended, and a caller whose
					// ctx ended must not get it. Give it back.
					if writer {
						rw.release()
					} else {
						rw.state.Add(-rwReader)
					}
					rw.dispatchLocked()
					rw.q.Unlock()
					return waitq.DoneErr(ctx)
				}
				rw.q.Unlock()
				return nil
			}
			continue
		}
		// Set the waiters bit with a CAS against the state we judged, not an
		// add: if the holder left in between, its unlock saw no waiters and
		// will not dispatch, so we must see the lock free and take it.
		if rw.state.CompareAndSwap(s, s|rwWaiters) {
			break
		}
	}
	w := rw.q.PushDone(done, writer)
	rw.q.Unlock()

	if _, ok := rw.q.Wait(done, w); ok {
		return nil
	}
	rw.q.Lock()
	if _, granted, _ := rw.q.Cancel(w); granted {
		// Handed the lock as ctx ended: hand it on.
		if writer {
			rw.release()
		} else {
			rw.state.Add(-rwReader)
		}
	}
	// Whether we held it or only stood in the queue, those behind us may now
	// proceed: the readers behind a writer that gave up, say.
	rw.dispatchLocked()
	rw.q.Unlock()
	return waitq.DoneErr(ctx)
}

// dispatchLocked hands the lock to the waiters at the head of the queue that
// can have it now: one writer if nobody holds it, or every reader up to the
// next writer if no writer holds it. Then it clears the waiters bit if the
// queue is empty. rw.q must be locked.
func (rw *RWLock) dispatchLocked() {
	for {
		// Load the state before looking for the head: Front drops waiters
		// whose ctx has ended, and must see the end of a ctx that came
		// before the unlock that the state shows.
		s := rw.state.Load()
		w := rw.q.Front()
		if w == nil {
			break
		}
		if s&rwWriter != 0 {
			return
		}
		if w.Val {
			// The writer waits for the readers to leave. A phantom among
			// them re-runs this dispatch once it has left.
			if readers(s) != 0 {
				return
			}
			rw.state.Add(rwWriter)
			rw.q.Grant(w, true)
			break
		}
		// A reader: it enters, and so do the readers behind it, up to the
		// first writer, which then waits for them all to leave; or up to
		// the most readers, and the next enter as the readers leave.
		if uint64(s) >= rwFull {
			return
		}
		rw.state.Add(rwReader)
		rw.q.Grant(w, false)
	}
	if rw.q.Len() == 0 && rw.state.Load()&rwWaiters != 0 {
		rw.state.Add(-rwWaiters)
	}
}

// Waiting returns the number of goroutines waiting in RLock or Lock at the
// moment of the call. For metrics; it may be stale by the time the caller
// looks at it.
func (rw *RWLock) Waiting() int {
	rw.q.Lock()
	defer rw.q.Unlock()
	return rw.q.Len()
}
