package ctxsync

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A Lazy is a value made once, on first use, by a function that may fail or
// be cancelled: sync.OnceValues for an init that takes a ctx, and that is
// tried again after a failure instead of keeping its error for good.
//
// Use NewLazy; a zero Lazy has no init, and its Get panics. A Lazy must not
// be copied after first use. A Lazy is safe for concurrent use by multiple
// goroutines.
//
// In the terminology of the Go memory model, the return of a successful init
// is synchronized before the return of every Get that returns its value, and
// of every Peek that reports it.
//
// Concurrent Gets share one run of init, as the callers of a Flight share a
// call, under the same rules: init runs in a goroutine of its own, under a ctx
// that carries the values of the ctx of the Get that started it (not its
// deadline or cancellation); each Get can leave when its ctx ends; and init's
// ctx is cancelled when every Get waiting for it has left. A success is kept
// for good, even one that every Get had left: later Gets return it at the
// cost of an atomic load. Then the Lazy lets go of init, which never runs
// again, so that what init holds can be collected. An error, a panic or a
// runtime.Goexit in init is not kept: the Gets waiting for that run get it (a
// panic raised again in each as a *PanicError, Goexit as ErrGoexit), and the
// next Get runs init again.
//
// init must not Get its own Lazy, which would wait for the run it is in. A Get
// under init's ctx, or a ctx made from it (another Lazy's init started under
// it has its values too), panics instead while init runs, also in a goroutine
// that init started; one under an unrelated ctx waits for itself until that
// ctx ends.
type Lazy[T any] struct {
	_ nocopy.NoCopy

	made atomic.Bool // val is made, and never written again
	val  T

	// keep serializes the writers of val. Flight runs one init at a time
	// while Gets wait for it; but a run that every Get left may go on while
	// a later Get starts another, and both may succeed: the first success
	// is kept, and the other run's Gets get it too.
	keep sync.Mutex

	// init is the caller's init until a run of it succeeds; then nil, so
	// that what its closure holds can be collected: it never runs again.
	// Loaded by every Get that finds the value not made, and cleared by a
	// run while they may load it, it is an atomic pointer.
	init   atomic.Pointer[func(ctx context.Context) (T, error)]
	flight Flight[struct{}, T]
}

// NewLazy returns a Lazy whose value init makes, on the first Get.
//
// NewLazy panics if init is nil.
func NewLazy[T any](init func(ctx context.Context) (T, error)) *Lazy[T] {
	if init == nil {
		panic("ctxsync: NewLazy with nil init")
	}
	l := &Lazy[T]{}
	l.init.Store(&init)
	return l
}

// Get returns the value, running init to make it if it is not made yet, or
// waiting for the run of init in flight.
//
// On failure Get returns ctx.Err(), or the error of the run of init it waited
// for; a ctx that is already done fails even when the value is made. A Get
// that leaves changes nothing: the run goes on for the other Gets, and is
// cancelled when the last of them leaves. If init panicked, Get panics with a
// *PanicError.
//
// Get panics on a Lazy not made by NewLazy, and when init calls it under
// init's ctx (see Lazy).
func (l *Lazy[T]) Get(ctx context.Context) (T, error) {
	// The path of a made value: an atomic load, then a look at ctx, in
	// that order (see get). Everything else, misuse included, takes get.
	//
	// val is read before ctx is looked at, and a done ctx returns from here,
	// so that after the call to Err only the value is still needed: the
	// others need not be kept across the call (a look at ctx is a call
	// through an interface, which nothing can inline).
	if l.made.Load() && ctx != nil {
		v := l.val
		if err := ctx.Err(); err != nil {
			var zero T
			return zero, err
		}
		return v, nil
	}
	return l.get(ctx)
}

func (l *Lazy[T]) get(ctx context.Context) (T, error) {
	// made is loaded before ctx is looked at, as in Get: a value seen made
	// before a look that finds ctx alive was made before ctx ended. The
	// other order would hand a Get whose ctx had ended a value made after.
	//
	// init is loaded before made: a run clears init only after it set
	// made, so an init found gone with the value not made is a zero Lazy's.
	noInit := l.init.Load() == nil
	made := l.made.Load()
	if noInit && !made {
		panic("ctxsync: Lazy.Get on a zero Lazy; use NewLazy")
	}
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		var zero T
		return zero, err
	}
	if made {
		return l.val, nil
	}
	// Looked at without any lock (ctx is the caller's code), and only on
	// this path: a Get from init finds the value not made. Joining the run
	// in flight, it would count among its Gets, so the run's ctx would
	// never end and init would wait for itself for good, with every later
	// Get joining it.
	if running, _ := ctx.Value(lazyInitKey[T]{l}).(*atomic.Bool); running != nil && running.Load() {
		panic("ctxsync: Lazy.Get called by its own init, which would wait for itself")
	}
	v, err, _ := l.flight.Do(ctx, struct{}{}, l.run)
	return v, err
}

// run is the Flight's fn: one run of init.
func (l *Lazy[T]) run(ctx context.Context) (T, error) {
	// init before made, as in get: init is gone only once made is set.
	init := l.init.Load()
	if init == nil || l.made.Load() {
		// Made by a run that ended after the Get that started this one
		// looked.
		return l.val, nil
	}
	ictx := &lazyInitCtx[T]{Context: ctx, l: l}
	ictx.running.Store(true)
	// The mark holds while this run lasts only: a ctx kept from it (say
	// with context.WithoutCancel) may Get the Lazy once the run is over.
	defer ictx.running.Store(false)
	v, err := (*init)(ictx)
	if err != nil {
		return v, err
	}
	l.keep.Lock()
	defer l.keep.Unlock()
	if !l.made.Load() {
		l.val = v
		l.made.Store(true)
		// The value is kept for good and init never runs again: let go of
		// it, and of all it holds. (A run still going, started before,
		// holds its own reference.)
		l.init.Store(nil)
	}
	return l.val, nil
}

// lazyInitKey is the key by which a lazyInitCtx of l answers, with a
// *atomic.Bool true while its run lasts.
type lazyInitKey[T any] struct{ l *Lazy[T] }

// A lazyInitCtx is the ctx a run of init gets: the Flight's ctx for the run,
// marked as l's, so that a Get under it, or under a ctx made from it, is told
// apart (see get). It is a type of its own, not a context.WithValue, so as
// to pass on the AfterFunc of the Flight's ctx: the context package then
// cancels a ctx that init derives (a WithTimeout) as the run's ctx is
// cancelled, and starts no goroutine to wait for it.
type lazyInitCtx[T any] struct {
	context.Context // the Flight's ctx for the run
	l               *Lazy[T]
	running         atomic.Bool
}

// Value answers for lazyInitKey of l, and passes every other key on.
func (c *lazyInitCtx[T]) Value(key any) any {
	if k, ok := key.(lazyInitKey[T]); ok && k.l == c.l {
		return &c.running
	}
	return c.Context.Value(key)
}

// AfterFunc passes on the AfterFunc of the Flight's ctx, which the context
// package calls for a ctx derived from this one.
func (c *lazyInitCtx[T]) AfterFunc(f func()) (stop func() bool) {
	if a, ok := c.Context.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(c.Context, f)
}

// String names the ctx for printing, without its fields, which change.
func (c *lazyInitCtx[T]) String() string { return "ctxsync.Lazy init context" }

// Peek returns the value and true if it is made, and the zero value and false
// otherwise. It never waits and never runs init; it works on a zero Lazy.
func (l *Lazy[T]) Peek() (T, bool) {
	if l.made.Load() {
		return l.val, true
	}
	var zero T
	return zero, false
}
