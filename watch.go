package ctxsync

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A Watch holds the latest value of something that changes (a configuration,
// a leader's address, a feature flag) and lets goroutines wait for the next
// change, as tokio's sync::watch does. Each value has a version: 1 for the
// value the Watch starts with, one more for each Store. Nothing is buffered:
// a reader that falls behind sees the latest value, not every one in between.
//
// The zero Watch holds the zero value of T at version 1, as NewWatch would
// with it, and is ready to use. A Watch must not be copied after first use. A
// Watch is safe for concurrent use by multiple goroutines.
//
// In the terminology of the Go memory model, a call to Store is synchronized
// before the return of any Load, Wait or step of Changes that observes the
// version it made, and a call to Close before the return of any Wait that
// fails with ErrClosed.
//
// Load never waits and costs about one atomic load: each value lives with its
// version in a snapshot that is never changed once made, published by an
// atomic pointer. Store wakes every waiter once, by closing one channel, and
// never waits for a reader, however slow.
//
// A Watch may be used by one testing/synctest bubble after another, and
// outside any in between: the channel waiters block on is made by the first
// of them and dropped when the last gives up. As for every primitive of the
// package, a Store or Close outside a bubble while a goroutine inside it
// waits is refused by the runtime (see "Testing with synctest" in the package
// documentation).
type Watch[T any] struct {
	_ nocopy.NoCopy

	// cur is the current snapshot; nil in the zero Watch, which holds the
	// zero T at version 1. It is written with mu held, and read without.
	cur atomic.Pointer[watchSnap[T]]

	mu sync.Mutex
	// ch is closed by the Store or Close that ends the current version; nil
	// while nobody waits for it.
	//
	// The first goroutine that waits makes it, rather than Store: a channel
	// made inside a testing/synctest bubble may not be used outside it, and
	// one made outside does not leave a bubbled goroutine durably blocked. A
	// channel made by its first waiter, and dropped when its last waiter gives
	// up (see leave), belongs to the bubble of the goroutines that use it, and
	// a Watch can pass from one bubble to the next.
	ch      chan struct{} // guarded by mu
	holders int           // guarded by mu: the goroutines waiting on ch
	closed  bool          // guarded by mu
}

// A watchSnap is one version of a Watch's value. It is never changed once
// published, so Load needs no lock and no copy-on-read.
type watchSnap[T any] struct {
	v   T
	ver uint64
}

// NewWatch returns a Watch holding v at version 1.
func NewWatch[T any](v T) *Watch[T] {
	w := new(Watch[T])
	w.cur.Store(&watchSnap[T]{v: v, ver: 1})
	return w
}

// Load returns the current value and its version. It never waits, and works
// after Close too.
func (w *Watch[T]) Load() (T, uint64) {
	if s := w.cur.Load(); s != nil {
		return s.v, s.ver
	}
	var zero T
	return zero, 1
}

// Version returns the current version, as Load does, without the value: for
// metrics, which can read it without knowing T.
func (w *Watch[T]) Version() uint64 {
	if s := w.cur.Load(); s != nil {
		return s.ver
	}
	return 1
}

// Store makes v the current value, with the next version, and wakes every
// goroutine waiting in Wait or Changes. It never waits for them: a reader
// that has not yet looked at the previous value will see v instead.
//
// Close is final: a Store after Close changes nothing (v is dropped). So a
// waiter told ErrClosed was told the truth, that no newer version will come,
// and a producer that races a shutdown need not coordinate with it.
func (w *Watch[T]) Store(v T) {
	// Made before the lock, to keep the critical section to a few words.
	s := &watchSnap[T]{v: v}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	s.ver = w.versionLocked() + 1
	w.cur.Store(s)
	ch := w.ch
	w.ch, w.holders = nil, 0
	w.mu.Unlock()
	// Closed after the unlock: the runtime readies each waiter while it
	// closes, which need not delay goroutines coming to wait for s.
	if ch != nil {
		close(ch)
	}
}

// versionLocked returns the current version. w.mu must be held.
func (w *Watch[T]) versionLocked() uint64 {
	if s := w.cur.Load(); s != nil {
		return s.ver
	}
	return 1
}

// Close ends every wait that has nothing newer to return: Wait and Changes
// end with ErrClosed, now and from then on. Load still works. A Wait whose
// after is below the current version still returns the current value, so the
// last value stored is never hidden from a waiter that had not seen it.
// Closing a closed Watch does nothing. There is no reopening: make a new
// Watch.
func (w *Watch[T]) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	ch := w.ch
	w.ch, w.holders = nil, 0
	w.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// Wait returns the current value and its version once the version is above
// after, waiting until it is. With after 0 it returns at once; with after
// taken from the last Load or Wait it waits for the next Store. A Store is
// never missed: if one came since after was read, Wait returns at once. No
// version is above math.MaxUint64: a Wait for it ends only with its ctx or
// Close.
//
// On failure it returns the zero T, version 0, and ctx.Err() or, once the
// Watch is closed and nothing newer than after is there, ErrClosed. A ctx
// that is already done fails even when a newer version is there, and waiting
// changes nothing for other waiters. A nil ctx panics.
func (w *Watch[T]) Wait(ctx context.Context, after uint64) (T, uint64, error) {
	var zero T
	waitq.CheckCtx(ctx, "ctxsync")
	// The version is loaded before ctx is looked at, and again before each
	// look: a value seen then was stored while ctx was alive. The other
	// order would hand a caller that had given up a value stored after
	// (ctx ended, a Store came, then the load).
	s := w.cur.Load()
	if err := ctx.Err(); err != nil {
		return zero, 0, err
	}
	var done <-chan struct{}
	for {
		// The fast path: a reader behind the current version reads it
		// without the lock.
		if s != nil && s.ver > after {
			return s.v, s.ver, nil
		} else if s == nil && after < 1 {
			return zero, 1, nil
		}
		if done == nil {
			// Read before joining: ctx is the caller's code, and nothing
			// must be counted for the caller while it runs.
			done = ctx.Done()
		}
		ch, err := w.join(after)
		if err != nil {
			return zero, 0, err
		}
		if ch != nil {
			if done == nil {
				<-ch
			} else {
				select {
				case <-ch:
					// A Store or Close: the loop reads which.
				case <-done:
					w.leave(ch)
					return zero, 0, waitq.DoneErr(ctx)
				}
			}
		}
		// A newer version, or Close, came since the last look at ctx:
		// by a Store that woke us, or one that join found (perhaps
		// while ctx.Done ran). When ctx ended too, select picked one of
		// the two at random, and ctx may have ended first: a caller
		// that had given up must not get the value (see Wait's doc).
		// Failing here costs nobody anything, as nothing is consumed;
		// ch is the Store's, no longer counted in holders.
		s = w.cur.Load()
		if waitq.Ended(done) {
			return zero, 0, waitq.DoneErr(ctx)
		}
	}
}

// join counts the caller among the waiters for the version after the one
// it read, and returns the channel to wait on. It returns a nil channel if
// the version is already above after, and ErrClosed if the Watch is closed
// and it is not.
func (w *Watch[T]) join(after uint64) (chan struct{}, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.versionLocked() > after {
		return nil, nil
	}
	if w.closed {
		return nil, ErrClosed
	}
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	w.holders++
	return w.ch, nil
}

// leave takes a waiter whose ctx ended off ch, if ch is still the one the
// next Store will close. The last to leave drops the channel, so that a
// Store or Wait from another bubble, or from none, never touches a channel
// of a bubble that may have ended (see Watch.ch).
func (w *Watch[T]) leave(ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// ch cannot be a new channel at a reused address: the caller holds it.
	if w.ch == ch {
		if w.holders--; w.holders == 0 {
			w.ch = nil
		}
	}
}

// Changes returns an iterator over the values of w: it yields the current
// value, then each newer value it sees, until ctx ends, w is closed, or the
// loop body stops it. Values stored while the body runs are not queued: the
// next step yields the latest of them, so intermediate values may be skipped,
// and no value is yielded twice. After Close, the values stored before it
// that the loop had not yet yielded end with the latest; then the loop ends.
//
// Each range over the iterator starts again from the current value. Nothing
// runs between steps: breaking out of the loop leaves no goroutine and no
// waiter behind. A ctx that is already done yields nothing. Changes panics
// at once on a nil ctx. On a closed Watch it yields the current value and
// ends. To learn why a loop ended, look at ctx.Err().
func (w *Watch[T]) Changes(ctx context.Context) iter.Seq[T] {
	waitq.CheckCtx(ctx, "ctxsync")
	return func(yield func(T) bool) {
		// Loaded before ctx is looked at, as in Wait: a value yielded was
		// there while ctx was alive.
		v, ver := w.Load()
		if ctx.Err() != nil {
			return
		}
		for yield(v) {
			var err error
			if v, ver, err = w.Wait(ctx, ver); err != nil {
				return
			}
		}
	}
}
