package ctxsync

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/ctxsync/ctxsync/internal/keycheck"
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
// a goroutine start and a hand-over per call, two to three times what
// singleflight's whole Do costs when fn returns at once, and nothing that
// matters when fn waits for a database or a network. It runs
// under a ctx of its own, which carries the values of the ctx of the caller
// that started the call, but neither its deadline nor its cancellation (a
// caller that gives up must not fail the others, as singleflight's first
// caller does). That ctx is cancelled once every caller waiting for the call
// has left, so that nobody's work goes on for nobody, and when fn returns,
// before its result reaches any caller. A Do that comes after every caller
// has left starts a new call rather than join one whose ctx is cancelled.
//
// A panic in fn is recovered in fn's goroutine and raised again, as a
// *PanicError carrying the value and fn's stack, in the goroutine of each
// caller that gets the call's result; runtime.Goexit in fn gives them the
// error ErrGoexit, also when a deferred call of fn calls it while fn panics
// (the Goexit ends the panic). A panic in a call that every caller had left
// is dropped: nobody is there to receive it, and ending the program because
// its callers gave up in time would make a crash depend on timing. The next
// Do for the key runs fn again, and meets the panic again if it is a bug.
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

	mu sync.Mutex
	// The call a Do for each key joins: one, while it is the only key in
	// flight, or else the map. A Flight used for one key at a time (a
	// caller calling Do in a loop, a Lazy) costs no map insert, look-up and
	// delete per call, which were a tenth of a call's cost when fn returns
	// at once.
	one   *flightCall[K, V]       // guarded by mu
	calls map[K]*flightCall[K, V] // guarded by mu
	peak  int                     // guarded by mu: the most keys in calls since it was made

	// spare is a finished call's struct, kept for the next call (see
	// flightCall.release). One is enough for a caller that calls Do in a
	// loop; more calls at once allocate, as before.
	spare atomic.Pointer[flightCall[K, V]]
}

// flightMapKeep is the most keys a Flight's map may have held and still be
// kept when it empties. A Go map does not shrink when its keys are deleted,
// so one that a burst of keys grew is dropped once no call is left in it,
// and memory follows the keys in flight; a small one is kept, so that a new
// key per call allocates no map.
const flightMapKeep = 64

// A flightCall is one run of fn and the callers that wait for its result.
//
// Once fn has returned and every waiter has read the result, the struct is
// reused for the next call of the Flight, if the spare slot is free: its
// allocation was, with the goroutine start, most of what a call cost when fn
// returns at once. fn's ctx is not part of it, but made for each call: fn may
// keep its ctx after it returns (in a goroutine it left behind), and a reused
// ctx would come back to life. Nothing in the struct survives a reuse that
// belongs to a testing/synctest bubble: its channel is made anew for each
// call, by a caller.
//
// Its result goes to every waiter at once, by the close of one channel,
// rather than by a wake-up per waiter: they all get the same thing. Each
// waiter still has a node of its own in the call's list, so that finish can
// leave out a waiter whose ctx ended before the result came (it must not get
// it, nor count in shared) and the last waiter to leave can be known.
type flightCall[K comparable, V any] struct {
	ctx *flightCtx // fn's

	f     *Flight[K, V]
	start func() // c.run, made with the struct: a go statement of it allocates nothing
	key   K
	fn    func(ctx context.Context) (V, error) // until run calls it

	// refs counts those that may still touch the struct: fn's goroutine,
	// until finish is over, and each waiter, until it has read the result or
	// left. The last to release it hands it to the spare slot.
	refs atomic.Int32

	head, tail *flightWaiter // guarded by the Flight's mu: the waiters, oldest first
	n          int           // guarded by the Flight's mu: how many
	first      flightWaiter  // the starting caller's node, made with the call

	// ready is closed by finish, after the result is handed out. It is
	// made, under the Flight's mu, by the first waiter that blocks: a caller
	// alone with an fn that returns at once usually finds the result while
	// it yields (see Do), and then no channel is made.
	ready chan struct{}

	// resolved is set by finish, under the Flight's mu, once every waiter's
	// granted is written and the result with it. A waiter reads it without
	// the lock while it yields.
	resolved atomic.Bool

	// The result, written by fn's goroutine before finish, and read by the
	// waiters after resolved or ready tells them it is there.
	val      V
	err      error
	panicked bool // err is the *PanicError of a panic in fn, to raise again
	shared   bool // more than one waiter was granted the result
}

// A flightWaiter is a caller's place in a call's list.
type flightWaiter struct {
	next, prev *flightWaiter   // guarded by the Flight's mu
	done       <-chan struct{} // the caller's ctx.Done(), read before it locked

	// granted is written by finish, under the Flight's mu, before the call
	// is resolved: the waiter gets the result. Once resolved, a waiter that
	// was not granted had its ctx end before the result came.
	granted bool
}

// flightYields is how many times the caller that starts a call yields,
// looking for the result in between, before it blocks. fn's goroutine was
// just made ready on the caller's own processor (a new goroutine runs next
// there), so when fn returns at once the first yield usually finds the
// result, and a yield costs less than a channel, a park and a wake-up.
// When fn takes longer, two yields cost next to nothing beside it.
const flightYields = 2

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
// Do panics if fn is nil, if key does not equal itself (a float NaN, or a
// struct or interface holding one), which a map could never find again, and
// if key, of an interface type, holds a value that cannot be compared (a
// slice, a map, a func).
func (f *Flight[K, V]) Do(ctx context.Context, key K, fn func(ctx context.Context) (V, error)) (v V, err error, shared bool) {
	if fn == nil {
		panic("ctxsync: Flight.Do with nil fn")
	}
	if !keycheck.Equal(key, "ctxsync: Flight.Do") {
		// A NaN (or a struct or interface holding one) can be put in a map
		// but never found again: its call would stay there for good.
		panic("ctxsync: Flight.Do with a key not equal to itself (a NaN?)")
	}
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return v, err, false
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	f.mu.Lock()
	c := f.lookupLocked(key)
	var w *flightWaiter
	if c == nil {
		// Look at ctx again before starting a call: it may have ended
		// while we waited for the lock, and a call started for a caller
		// that has gone would run fn for nobody. (Joining needs no second
		// look: finish leaves out a waiter whose ctx has ended.)
		if waitq.Ended(done) {
			f.mu.Unlock()
			return v, waitq.DoneErr(ctx), false
		}
		c = f.startLocked(ctx, key, fn)
		w = &c.first
	} else {
		w = new(flightWaiter)
		c.refs.Add(1)
		if c.ready == nil {
			c.ready = make(chan struct{}) // a joiner blocks at once
		}
	}
	w.done = done
	c.pushLocked(w)
	ready := c.ready
	f.mu.Unlock()

	if w == &c.first {
		// After the unlock: fn may call back into the Flight at once.
		start := c.start
		go start()
		for range flightYields {
			runtime.Gosched()
			if c.resolved.Load() {
				return c.result(ctx, w)
			}
		}
		f.mu.Lock()
		if c.ready == nil && !c.resolved.Load() {
			c.ready = make(chan struct{})
		}
		ready = c.ready
		f.mu.Unlock()
		if ready == nil {
			return c.result(ctx, w) // resolved meanwhile
		}
	}

	if done == nil {
		// A ctx that can never end: a plain receive is cheaper than a
		// select.
		<-ready
		return c.result(ctx, w)
	}
	select {
	case <-ready:
		return c.result(ctx, w)
	case <-done:
	}
	f.mu.Lock()
	if c.resolved.Load() {
		// The result came first (granted) or after ctx ended (not): either
		// way, finish has settled w.
		f.mu.Unlock()
		return c.result(ctx, w)
	}
	c.unlinkLocked(w)
	// The last caller to leave a call that has not ended cancels it, and
	// takes it out of the map first, so that nobody joins it afterwards:
	// a Do that comes now starts a call whose ctx is alive.
	abandon := c.n == 0
	if abandon {
		f.removeLocked(c)
	}
	f.mu.Unlock()
	fnCtx := c.ctx
	c.release()
	if abandon {
		fnCtx.cancel()
	}
	return v, waitq.DoneErr(ctx), false
}

// startLocked makes a call of fn for key, under a ctx with the values of
// ctx, and enters it for Do to find (see Flight.one). f.mu must be held.
// It calls none of ctx's methods: the call's ctx holds ctx only for its
// Value.
func (f *Flight[K, V]) startLocked(ctx context.Context, key K, fn func(context.Context) (V, error)) *flightCall[K, V] {
	c := f.spare.Swap(nil)
	if c == nil {
		c = &flightCall[K, V]{f: f}
		c.start = c.run
	}
	c.key, c.fn = key, fn
	c.ctx = &flightCtx{parent: ctx}
	c.refs.Store(2) // fn's goroutine and the caller
	if f.one == nil && len(f.calls) == 0 {
		f.one = c
		return c
	}
	if f.calls == nil {
		f.calls = make(map[K]*flightCall[K, V])
	}
	f.calls[key] = c
	f.peak = max(f.peak, len(f.calls))
	return c
}

// lookupLocked returns the call for key that a Do would join, or nil. f.mu
// must be held.
func (f *Flight[K, V]) lookupLocked(key K) *flightCall[K, V] {
	if f.one != nil && f.one.key == key {
		return f.one
	}
	return f.calls[key]
}

// removeLocked takes c out of the Flight, if a Do would still join it.
// f.mu must be held.
func (f *Flight[K, V]) removeLocked(c *flightCall[K, V]) {
	if f.one == c {
		f.one = nil
	} else if f.calls[c.key] == c {
		f.deleteLocked(c.key)
	}
}

// deleteLocked takes key out of the map, and drops the map if it is empty
// and was once large (see flightMapKeep). f.mu must be held.
func (f *Flight[K, V]) deleteLocked(key K) {
	delete(f.calls, key)
	if len(f.calls) == 0 && f.peak > flightMapKeep {
		f.calls, f.peak = nil, 0
	}
}

// pushLocked appends w to c's waiters. The Flight's mu must be held.
func (c *flightCall[K, V]) pushLocked(w *flightWaiter) {
	w.prev = c.tail
	if c.tail == nil {
		c.head = w
	} else {
		c.tail.next = w
	}
	c.tail = w
	c.n++
}

// unlinkLocked takes w out of c's waiters. The Flight's mu must be held.
func (c *flightCall[K, V]) unlinkLocked(w *flightWaiter) {
	if w.prev == nil {
		c.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		c.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.next, w.prev = nil, nil
	c.n--
}

// run runs fn for c, in a goroutine of its own, and hands out its result,
// however fn ends.
func (c *flightCall[K, V]) run() {
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
		c.f.finish(c)
	}()
	fn := c.fn
	c.fn = nil // fn's ctx may outlive the call: it need not keep fn
	c.val, c.err = fn(c.ctx)
	returned = true
}

// finish hands c's result to the callers still waiting for it, and takes c
// out of the map if a Do would still join it.
func (f *Flight[K, V]) finish(c *flightCall[K, V]) {
	// fn's ctx is cancelled before the result is handed out, so that a
	// caller that has the result finds the ctx fn ran under, which fn may
	// have kept, done (see Flight).
	c.ctx.cancel()
	f.mu.Lock()
	f.removeLocked(c)
	// A waiter whose ctx has ended is left out: it must not get a result
	// that came after its caller gave up, nor count in shared. Every
	// waiter's granted is written before resolved is set, so a waiter
	// that reads resolved, or is woken by ready, finds its own settled.
	n := 0
	for w := c.head; w != nil; w = w.next {
		if !waitq.Ended(w.done) {
			w.granted = true
			n++
		}
	}
	c.shared = n > 1
	c.head, c.tail, c.n = nil, nil, 0
	c.resolved.Store(true)
	ready := c.ready
	f.mu.Unlock()
	if ready != nil {
		close(ready) // after the unlock: the woken need not wait for it
	}
	c.release()
}

// release gives up one reference to c (see refs). The last one clears c and
// offers it to the Flight's spare slot; if the slot is taken, c is left to
// the garbage collector.
func (c *flightCall[K, V]) release() {
	if c.refs.Add(-1) != 0 {
		return
	}
	var k K
	var v V
	c.ctx, c.key, c.fn = nil, k, nil
	c.head, c.tail, c.n = nil, nil, 0
	c.first = flightWaiter{}
	c.ready = nil
	c.resolved.Store(false)
	c.val, c.err, c.panicked, c.shared = v, nil, false, false
	c.f.spare.CompareAndSwap(nil, c)
}

// result returns c's result to a caller whose waiter w finish has settled,
// or raises fn's panic again in the caller's goroutine; or, if w's ctx had
// ended before the result came, an error for it even if ctx.Err() lags its
// Done channel (see waitq.DoneErr).
//
// It releases the caller's reference to c: the caller must not touch c after.
func (c *flightCall[K, V]) result(ctx context.Context, w *flightWaiter) (V, error, bool) {
	granted, val, err, panicked, shared := w.granted, c.val, c.err, c.panicked, c.shared
	c.release()
	if !granted {
		var zero V
		return zero, waitq.DoneErr(ctx), false
	}
	if panicked {
		panic(err)
	}
	return val, err, shared
}

// Forget forgets the call in flight for key, if any: the next Do for key
// starts a new call instead of joining it. The callers already waiting for
// the forgotten call still get its result, and its ctx is cancelled only when
// they have all left or fn returns. Forget panics on a key that cannot be
// compared, as Do does.
func (f *Flight[K, V]) Forget(key K) {
	if !keycheck.Equal(key, "ctxsync: Flight.Forget") {
		return // a NaN: never in flight (see Do)
	}
	f.mu.Lock()
	if c := f.lookupLocked(key); c != nil {
		f.removeLocked(c)
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
	n := len(f.calls)
	if f.one != nil {
		n++
	}
	return n
}
