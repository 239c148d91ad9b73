package ctxsync

import (
	"context"
	"runtime/debug"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A Flight suppresses duplicate calls, as golang.org/x/sync/singleflight
// does, but every caller can leave. While a call for a key is in flight, Do
// for that key joins it instead of starting another, and returns its result,
// or ctx.Err() as soon as its own ctx ends.
//
// The zero Flight is ready to use. A Flight must not be copied after first
// use. A Flight is safe for concurrent use by multiple goroutines.
//
// In the terminology of the Go memory model, the return of fn is
// synchronized before the return of every Do that returns its result.
//
// fn runs in a goroutine of its own, not in the caller's: a caller that
// leaves must be able to return while fn goes on for the others. That costs
// a goroutine start and a hand-over per call, several times what
// singleflight's whole Do costs when fn returns at once, and nothing that
// matters when fn waits for a database or a network. It runs
// under a ctx of its own, which carries the values of the ctx of the caller
// that started the call, but neither its deadline nor its cancellation (a
// caller that gives up must not fail the others, as singleflight's first
// caller does). That ctx is cancelled once every caller waiting for the call
// has left, so that nobody's work goes on for nobody, and when fn returns. A
// Do that comes after every caller has left starts a new call rather than
// join one whose ctx is cancelled.
//
// A panic in fn is recovered in fn's goroutine and raised again, as a
// *PanicError carrying the value and fn's stack, in the goroutine of each
// caller that gets the call's result; runtime.Goexit in fn gives them the
// error ErrGoexit. A panic in a call that every caller had left is dropped:
// nobody is there to receive it, and ending the program because its callers
// gave up in time would make a crash depend on timing. The next Do for the
// key runs fn again, and meets the panic again if it is a bug.
//
// A finished call leaves nothing behind for its key: its result goes to the
// callers that waited for it, and the next Do runs fn again (a Flight is not
// a cache; see Lazy for a value kept).
//
// In a testing/synctest bubble, fn's goroutine belongs to the bubble of the
// caller that started the call, and the call's waiters are durably blocked.
// A Flight made outside a bubble works inside one and after it; callers of
// one call must not be split across a bubble's edge, the hand-over the
// runtime refuses (see "Testing with synctest" in the package
// documentation).
type Flight[K comparable, V any] struct {
	_ nocopy.NoCopy

	mu    waitq.Mutex
	calls map[K]*flightCall[V] // guarded by mu: the call a Do for each key joins
	peak  int                  // guarded by mu: the most keys in calls since it was made
}

// flightMapKeep is the most keys a Flight's map may have held and still be
// kept when it empties. A Go map does not shrink when its keys are deleted,
// so one that a burst of keys grew is dropped once no call is left in it,
// and memory follows the keys in flight; a small one is kept, so that a new
// key per call allocates no map.
const flightMapKeep = 64

// A flightCall is one run of fn and the callers that wait for its result.
type flightCall[V any] struct {
	waiters waitq.List[flightLink] // guarded by the Flight's mu
	done    bool                   // guarded by the Flight's mu: fn has ended, the result is handed out

	ctx    context.Context // fn's
	cancel context.CancelFunc

	// The result, written by fn's goroutine before it grants the waiters,
	// and read by them after their grant.
	val      V
	err      error
	panicked bool // err is the *PanicError of a panic in fn, to raise again
}

// A flightLink is a waiter's payload. Until the grant, next links the
// waiters that finish will grant (see finish); the grant sets shared.
type flightLink struct {
	next   *waitq.Waiter[flightLink]
	shared bool
}

// Do runs fn and returns its results, unless a call for key is in flight: then
// it waits for that call and returns its results. shared reports whether the
// results went to more than one caller: only callers that got them count.
//
// fn's ctx is not the caller's: see Flight. fn may call the Flight's methods
// for other keys, and Forget. A Do for its own key joins its own call and,
// as with singleflight, waits for itself: that Do counts as a caller, so the
// call's ctx does not end while it waits, and only the end of the ctx it was
// given releases it.
//
// On failure Do returns ctx.Err() and shared is false; a ctx that is already
// done fails even when a call for key is in flight, and changes nothing. The
// call goes on for the other callers; when the last of them leaves, it is
// cancelled. If the result comes at the moment ctx ends, Do may return it.
// If fn panicked, Do panics with a *PanicError (see Flight).
//
// Do panics if fn is nil, or if key does not equal itself (a float NaN, or a
// struct or interface holding one), which a map could never find again.
func (f *Flight[K, V]) Do(ctx context.Context, key K, fn func(ctx context.Context) (V, error)) (v V, err error, shared bool) {
	if fn == nil {
		panic("ctxsync: Flight.Do with nil fn")
	}
	if key != key {
		// A NaN (or a struct or interface holding one) can be put in a map
		// but never found again: its call would stay there for good.
		panic("ctxsync: Flight.Do with a key not equal to itself (a NaN?)")
	}
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return v, err, false
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	f.mu.Lock()
	c := f.calls[key]
	start := c == nil
	if start {
		// Look at ctx again before starting a call: it may have ended
		// while we waited for the lock, and a call started for a caller
		// that has gone would run fn for nobody. (Joining needs no second
		// look: finish skips a waiter whose ctx has ended.)
		if waitq.Ended(done) {
			f.mu.Unlock()
			return v, waitq.DoneErr(ctx), false
		}
		c = f.startLocked(ctx, key)
	}
	w := c.waiters.PushDone(done, flightLink{})
	f.mu.Unlock()
	if start {
		// After the unlock: fn may call back into the Flight at once.
		go f.run(key, c, fn)
	}

	if l, ok := c.waiters.Wait(done, w); ok {
		return c.result(l.shared)
	}
	f.mu.Lock()
	l, granted, _ := c.waiters.Cancel(w)
	// The last caller to leave a call that has not ended cancels it, and
	// takes it out of the map first, so that nobody joins it afterwards:
	// a Do that comes now starts a call whose ctx is alive.
	abandon := !granted && !c.done && c.waiters.Len() == 0
	if abandon && f.calls[key] == c {
		f.deleteLocked(key)
	}
	f.mu.Unlock()
	if granted {
		// The result came before ctx ended (finish skips a waiter whose
		// ctx has ended): it is ours, and shared counted us.
		return c.result(l.shared)
	}
	if abandon {
		c.cancel()
	}
	return v, waitq.DoneErr(ctx), false
}

// startLocked makes a call for key, under a ctx with the values of ctx, and
// enters it in the map. f.mu must be held. It calls none of ctx's methods:
// the call's ctx holds ctx only for its Value.
func (f *Flight[K, V]) startLocked(ctx context.Context, key K) *flightCall[V] {
	c := new(flightCall[V])
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if f.calls == nil {
		f.calls = make(map[K]*flightCall[V])
	}
	f.calls[key] = c
	f.peak = max(f.peak, len(f.calls))
	return c
}

// deleteLocked takes key out of the map, and drops the map if it is empty
// and was once large (see flightMapKeep). f.mu must be held.
func (f *Flight[K, V]) deleteLocked(key K) {
	delete(f.calls, key)
	if len(f.calls) == 0 && f.peak > flightMapKeep {
		f.calls, f.peak = nil, 0
	}
}

// run runs fn for c, in a goroutine of its own, and hands out its result,
// however fn ends.
func (f *Flight[K, V]) run(key K, c *flightCall[V], fn func(ctx context.Context) (V, error)) {
	returned := false
	defer func() {
		if !returned {
			// fn panicked, or called runtime.Goexit, for which recover
			// returns nil (panic(nil) gives a *runtime.PanicNilError).
			if p := recover(); p != nil {
				c.err, c.panicked = &PanicError{Value: p, Stack: debug.Stack()}, true
			} else {
				c.err = ErrGoexit
			}
		}
		f.finish(key, c)
	}()
	c.val, c.err = fn(c.ctx)
	returned = true
}

// finish hands c's result to the callers still waiting for it, and takes c
// out of the map if a Do would still join it.
func (f *Flight[K, V]) finish(key K, c *flightCall[V]) {
	f.mu.Lock()
	if f.calls[key] == c {
		f.deleteLocked(key)
	}
	c.done = true
	// Two passes: the first finds the waiters that get the result, dropping
	// those whose ctx has ended (they never get it), and counts them; the
	// second grants them, each with shared set from the count. One pass
	// could not: a waiter reads shared as soon as it is granted, before the
	// count is known. The first pass links the waiters through their
	// payloads, since Front and Next, in the second pass, would drop a
	// waiter whose ctx ended after it was counted, and the count would be
	// wrong.
	var head, tail *waitq.Waiter[flightLink]
	n := 0
	for w := c.waiters.Front(); w != nil; w = c.waiters.Next(w) {
		if tail == nil {
			head = w
		} else {
			tail.Val.next = w
		}
		tail = w
		n++
	}
	for w := head; w != nil; {
		next := w.Val.next
		c.waiters.Grant(&f.mu, w, flightLink{shared: n > 1})
		w = next
	}
	f.mu.Unlock() // wakes the waiters that blocked
	c.cancel()
}

// result returns c's result to a caller that was granted it, or raises fn's
// panic again in the caller's goroutine.
func (c *flightCall[V]) result(shared bool) (V, error, bool) {
	if c.panicked {
		panic(c.err)
	}
	return c.val, c.err, shared
}

// Forget forgets the call in flight for key, if any: the next Do for key
// starts a new call instead of joining it. The callers already waiting for
// the forgotten call still get its result, and its ctx is cancelled only when
// they have all left or fn returns.
func (f *Flight[K, V]) Forget(key K) {
	f.mu.Lock()
	if _, ok := f.calls[key]; ok {
		f.deleteLocked(key)
	}
	f.mu.Unlock()
}

// Len returns the number of keys with a call in flight that a Do would join,
// at the moment of the call. A call that was forgotten, or that every caller
// left, is not counted, even while its fn still runs. For metrics; it may be
// stale by the time the caller looks at it.
func (f *Flight[K, V]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}
