package group

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/nocopy"
)

// Options configures a Group. The zero Options is a group without a limit
// that fails fast.
type Options struct {
	// Limit is how many tasks may run at once; Go waits for a slot beyond
	// it. 0 means no limit. A negative Limit panics.
	Limit int

	// CollectAll makes every task run to its end: a failing task does not
	// cancel the group's context, and Wait returns errors.Join of every
	// task's error. When false, the first error cancels the group's context
	// and is Wait's result. A panic cancels the group either way.
	CollectAll bool

	// CancelOnError, with CollectAll, makes the first error cancel the
	// group's context, with that error as its cause, while Wait still
	// returns errors.Join of every task's error, the first first: the
	// other tasks stop early, and no error is lost (conc's
	// WithCancelOnError with its error pool). The errors of tasks that
	// stopped because of the cancellation are among them, as they
	// returned them (often context.Canceled). Go called after the first
	// error returns the context's error and does not run f, as when
	// failing fast. Without CollectAll it changes nothing: failing fast
	// cancels on the first error anyway.
	CancelOnError bool
}

// A Group runs tasks in goroutines and waits for them all.
//
// Use New; the zero Group is not usable, and its methods panic. A Group must
// not be copied after first use. A Group is safe for concurrent use by
// multiple goroutines, with one rule that sync.WaitGroup has too: a call to Go
// or TryGo must happen before Wait returns, so it is made either before Wait
// is called or by a task of the group. Go after Wait has returned panics.
//
// Tasks run in goroutines of the group. When a task returns, its goroutine
// takes the next task waiting to start, if there is one, instead of ending:
// starting a goroutine for each task is most of what a group of short tasks
// costs. No task ever waits for its goroutine behind a task that runs: while
// one waits, a new goroutine is on its way to it. What a task leaves in its
// goroutine is therefore seen by the task that may follow it there (see Go).
//
// In the terminology of the Go memory model, a call of Go or TryGo that
// starts f is synchronized before f begins, and the return of every task is
// synchronized before the return of Wait.
//
// In testing/synctest bubbles, a Group made in a bubble works there, Wait
// blocking durably, and so does one made outside. Either may serve outside
// the bubble later, but for one use that the runtime refuses with a fatal
// error: once a task has asked for the group's ctx.Done() in a bubble,
// or Go has waited there for a slot of its Limit (it waits on that ctx),
// the context package has made that channel in the bubble, and closing it
// from outside (a failure, or Wait) is refused. Such a Group is waited for in
// the bubble. The other way round, once that channel has been made outside
// every bubble (by a task or a Go, as above), a goroutine of a bubble that
// waits on it is not durably blocked: a Go waiting for a slot there, or a
// task selecting on ctx.Done(), stops the bubble's clock, and the test hangs.
// The group's ctx has one Done channel for its whole life, so a Group shared
// across a bubble's edge waits on it on one side only.
//
// A Group must not be given tasks from inside a bubble while tasks given
// from outside it have not all returned, nor the other way round: a
// goroutine of the group started on one side could take a task given on the
// other (even one given after the other side's Go returned, while the
// goroutine it started has yet to run), which would then run on the wrong
// clock. Wait for the tasks of one side before giving tasks from the other.
type Group struct {
	_ nocopy.NoCopy

	ctx           context.Context
	cancel        context.CancelCauseFunc
	sem           *ctxsync.Semaphore // the slots; nil without a limit
	collectAll    bool
	cancelOnError bool
	tasks         atomic.Int64 // tasks started (or Go calls on their way) not ended
	waited        atomic.Bool  // Wait has returned once

	// The tasks started and waiting for a goroutine of the group (see
	// worker.go).
	qmu     sync.Mutex
	queue   []func(ctx context.Context) error  // guarded by qmu: from head on
	head    int                                // guarded by qmu
	pending bool                               // guarded by qmu: a fresh worker is on its way
	qbuf    [4]func(ctx context.Context) error // queue's first array

	mu       sync.Mutex
	idle     sync.Cond   // on mu: signalled when tasks drops to 0
	err      error       // guarded by mu: the first error (fail-fast)
	errLive  bool        // guarded by mu: err came while the group's ctx was live
	errs     []error     // guarded by mu: every error (CollectAll)
	joined   error       // guarded by mu: errors.Join(errs...) as Wait last returned it
	nJoined  int         // guarded by mu: len(errs) when joined was made
	panicked *PanicError // guarded by mu: the first panic
}

// Validate reports what is wrong with opts, if anything: a negative Limit.
// New panics with the same complaint; a program that reads a Limit from
// outside (a flag, say) can call Validate first.
func (opts Options) Validate() error {
	if opts.Limit < 0 {
		return errors.New("group: New with negative Limit")
	}
	return nil
}

// New returns a Group and a context derived from ctx that the tasks receive.
// The context is cancelled when a task fails (unless opts.CollectAll without
// opts.CancelOnError), when a
// task panics, when Wait returns, or when ctx ends, whichever comes first;
// context.Cause tells which: the failing task's error, the *PanicError, or
// context.Canceled for Wait.
//
// New panics if ctx is nil or opts is not valid (see Options.Validate).
func New(ctx context.Context, opts Options) (*Group, context.Context) {
	checkCtx(ctx)
	if err := opts.Validate(); err != nil {
		panic(err.Error())
	}
	g := &Group{collectAll: opts.CollectAll, cancelOnError: opts.CancelOnError}
	g.idle.L = &g.mu
	g.queue = g.qbuf[:0]
	g.ctx, g.cancel = context.WithCancelCause(ctx)
	if opts.Limit > 0 {
		g.sem = ctxsync.NewSemaphore(opts.Limit)
	}
	return g, g.ctx
}

// Go runs f in a goroutine of the group, passing it the group's context. When
// Limit tasks are running, Go first waits for one of them to end; callers
// waiting for a slot are served first in, first out.
//
// The goroutine may be new, or one whose task has just returned (see Group),
// so f must not leave its goroutine changed for a task that follows it: a
// task that calls runtime.LockOSThread calls runtime.UnlockOSThread before
// it returns, and goroutine labels set by pprof.SetGoroutineLabels stay for
// the next task (pprof.Do puts the old ones back). Work that needs a
// goroutine of its own, say to end with the thread it locked, starts one.
// Once Go has returned nil, f never waits for another task to return before
// it starts: a goroutine is on its way to it.
//
// If the group's context has ended, or ends while Go waits, Go returns that
// context's error (see context.Context.Err) and f never runs: no task starts
// after the group failed. The group then keeps nothing of f, so what f was to
// work on is still the caller's: a job that the caller took from a queue for
// f must be given back, or saved elsewhere and marked done (a ctxsync.Queue's
// TaskDone), or it is lost, and the queue's Join waits for it for ever.
// ForEach over q.All(ctx) does not have the problem: it takes a slot before
// it takes a job. With a limit, a task calling Go waits for a slot like any
// caller, and so may wait for itself if it holds the last one.
//
// Go panics if f is nil, if the Group was not made by New, or if Wait has
// returned.
func (g *Group) Go(f func(ctx context.Context) error) error {
	g.checkGo(f, "Go")
	if err := g.reserve(); err != nil {
		return err
	}
	g.start(f)
	return nil
}

// reserve counts a task on its way and waits for its slot, as Go does; on
// failure it returns the group's ctx's error and counts nothing. A task
// reserved is then started with start, or given up with unreserve.
func (g *Group) reserve() error {
	// Counted before it waits for a slot, so a Wait that starts meanwhile
	// (from another task) waits for this task too.
	g.tasks.Add(1)
	var err error
	if g.sem != nil {
		err = g.sem.Acquire(g.ctx) // a done ctx fails even with a slot free
	} else {
		err = g.ctx.Err()
	}
	if err != nil {
		g.taskDone()
	}
	return err
}

// unreserve gives up a task reserved and not started.
func (g *Group) unreserve() {
	if g.sem != nil {
		g.sem.Release()
	}
	g.taskDone()
}

// TryGo runs f in a goroutine of the group, as Go does, if a slot is free
// now and nobody is waiting for one, and reports whether it did. It never
// waits. It returns false, and f never runs, if the group's context has
// ended. When it returns false, what f was to work on is still the
// caller's, as when Go fails.
//
// TryGo panics if f is nil, if the Group was not made by New, or if Wait has
// returned.
func (g *Group) TryGo(f func(ctx context.Context) error) bool {
	g.checkGo(f, "TryGo")
	if g.sem != nil {
		if !g.sem.TryAcquire() {
			return false
		}
		// Looked at after the slot is taken: a failing task cancels the
		// ctx before it frees its slot, so the slot it freed is refused.
		if g.ctx.Err() != nil {
			g.sem.Release()
			return false
		}
	} else if g.ctx.Err() != nil {
		return false
	}
	g.tasks.Add(1)
	g.start(f)
	return true
}

// checkGo panics on the misuses of Go and TryGo.
func (g *Group) checkGo(f func(ctx context.Context) error, name string) {
	if f == nil {
		panic("group: " + name + " with nil function")
	}
	if g.ctx == nil {
		panic("group: " + name + " on a Group not made by New: use New")
	}
	if g.waited.Load() {
		panic("group: " + name + " after Wait returned")
	}
}

// run is the body of a task's goroutine: it runs f and settles its outcome.
func (g *Group) run(f func(ctx context.Context) error) {
	returned := false
	defer func() {
		if !returned {
			// A panic, or runtime.Goexit if recover finds none (panic(nil)
			// recovers a *runtime.PanicNilError).
			g.abort(recover())
		}
		// The slot is freed only after a failure has cancelled the ctx
		// (in fail or abort): a Go waiting for it then sees the ctx done
		// and does not start a task after the failure.
		if g.sem != nil {
			g.sem.Release()
		}
		g.taskDone()
	}()
	err := f(g.ctx)
	returned = true
	if err != nil {
		g.fail(err)
	}
}

// runHere runs f as a task of g in the calling goroutine, which is to wait
// anyway, and saves a goroutine: Map and MapAll run one worker so. A panic
// of f is recovered and recorded as in any task. If f calls runtime.Goexit
// (t.FailNow in a test), the calling goroutine ends as f asked, but only
// after the group, cancelled, has no task left: none outlives the call.
func (g *Group) runHere(f func(ctx context.Context) error) {
	g.tasks.Add(1)
	returned := false
	defer func() {
		if !returned { // runtime.Goexit: run recovers panics
			g.cancel(ErrGoexit)
			g.waitTasks()
		}
	}()
	g.run(f)
	returned = true
}

// taskDone counts a task (or a Go call that started none) as ended, and
// wakes the Waits if it was the last.
func (g *Group) taskDone() {
	if g.tasks.Add(-1) != 0 {
		return
	}
	// Under mu, so that a Wait that saw a task left is already asleep.
	g.mu.Lock()
	g.idle.Broadcast()
	g.mu.Unlock()
}

// waitTasks waits until no task runs.
//
// It is not a sync.WaitGroup because the runtime ties a WaitGroup to the
// testing/synctest bubble of its first Add for good, and a later Add from
// outside the bubble is a fatal error, which would make a Group used in a
// bubble unusable after it. A sync.Cond ties nothing, and its Wait blocks
// durably in a bubble, as a WaitGroup's would.
func (g *Group) waitTasks() {
	if g.tasks.Load() == 0 {
		return // the last taskDone is synchronized before this load
	}
	g.mu.Lock()
	for g.tasks.Load() != 0 {
		g.idle.Wait()
	}
	g.mu.Unlock()
}

// fail records a task's error and, failing fast, cancels the group.
func (g *Group) fail(err error) {
	g.mu.Lock()
	if g.collectAll {
		g.errs = append(g.errs, err)
		first := len(g.errs) == 1
		g.mu.Unlock()
		if first && g.cancelOnError {
			g.cancel(err)
		}
		return
	}
	first := g.err == nil
	if first {
		g.err = err
		g.errLive = g.ctx.Err() == nil
	}
	g.mu.Unlock()
	if first {
		g.cancel(err)
	}
}

// abort records a task that did not return: it panicked with v, which
// cancels the group, or called runtime.Goexit if v is nil, which fails like
// an error.
func (g *Group) abort(v any) {
	if v == nil {
		g.fail(ErrGoexit)
		return
	}
	p := &PanicError{Value: v, Stack: debug.Stack()}
	g.mu.Lock()
	if g.panicked == nil {
		g.panicked = p
	}
	g.mu.Unlock()
	g.cancel(p)
}

// Wait waits for every task started by Go and TryGo to return, cancels the
// group's context, and returns the first task's error, or with CollectAll
// errors.Join of every task's error in the order they ended; nil if no task
// failed. A Go refused because the context ended is not a task: its error
// went to its caller.
//
// If a task panicked, Wait panics with a *PanicError holding the first panic's
// value and stack, once every task has returned. Wait may be called more than
// once and returns (or panics) the same each time. Wait must not be called by
// a task of its group, which it would wait for.
//
// Wait panics if the Group was not made by New.
func (g *Group) Wait() error {
	if g.ctx == nil {
		panic("group: Wait on a Group not made by New: use New")
	}
	g.waitTasks()
	g.cancel(nil) // cause: context.Canceled
	g.waited.Store(true)
	g.mu.Lock()
	p, err := g.panicked, g.err
	if g.collectAll {
		// Joined once, so that each Wait returns the identical value. (It is
		// joined again only if a task failed after a Wait, which a Go racing
		// with Wait's return, a misuse, could make happen.)
		if g.nJoined != len(g.errs) {
			g.joined, g.nJoined = errors.Join(g.errs...), len(g.errs)
		}
		err = g.joined
	}
	g.mu.Unlock()
	if p != nil {
		panic(p)
	}
	return err
}

// checkCtx panics on a nil ctx, as the standard library does.
func checkCtx(ctx context.Context) {
	if ctx == nil {
		panic("group: nil Context")
	}
}
