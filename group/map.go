package group

import (
	"context"
	"iter"
	"sync/atomic"
)

// Map runs f on every item, at most limit at once (0: no limit), and returns
// the results in the items' order.
//
// The first error cancels the context that f receives, no item starts after
// it, and Map returns it with nil results once the calls in flight have
// returned. If ctx ends before every item has started, or before a call
// fails, Map returns ctx.Err() and nil results: a call that fails after ctx
// ended most likely failed because it did. A ctx that is already done runs
// nothing. A panic in f is raised again by Map as a *PanicError, as Wait
// does. A call of f that ends in runtime.Goexit (as t.FailNow does) fails
// with ErrGoexit, which Map returns as the first error; but in the calling
// goroutine, which runs the first worker (see below), and so always item 0,
// Goexit ends the caller, as it asked, once the calls in flight have
// returned.
//
// Items are started in their order. Map runs up to min(limit, len(items))
// workers, each of which takes the next item as it finishes one, so a limit
// costs no goroutine per item. The first worker is the calling goroutine,
// which would only wait otherwise (with limit 1, f runs only there); each
// worker starts the next as it takes an item while items are left, so quick
// items that one goroutine gets through start few goroutines, and slow ones
// reach the limit within microseconds.
//
// Map panics if ctx or f is nil or limit is negative.
func Map[T, R any](ctx context.Context, items []T, limit int, f func(ctx context.Context, item T) (R, error)) ([]R, error) {
	checkMap(ctx, limit, f == nil, "Map")
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := &mapper[T, R]{items: items, results: make([]R, len(items)), f: f}
	g, _ := New(ctx, Options{})
	m.start(g, limit, m.firstError)
	err := g.Wait()
	if err == nil && !m.stopped.Load() {
		return m.results, nil
	}
	// A failure after ctx ended is most likely the end of ctx, seen by f.
	if err == nil || !g.errLive {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
	}
	return nil, err
}

// MapAll runs f on every item, at most limit at once (0: no limit), and
// returns every result and every error, each at its item's index, as
// asyncio.gather with return_exceptions=True does: an error does not stop the
// other items. results[i] is what f returned for items[i], even along with an
// error. The error slice is nil when no call failed.
//
// An item that has not started when ctx ends does not run: its error is
// ctx.Err() and its result the zero R; a ctx that is already done runs
// nothing. An item whose f calls runtime.Goexit (as t.FailNow does) failed:
// its error is ErrGoexit. A panic in f cancels the rest and is raised again
// by MapAll as a *PanicError, as Wait does. As Map does, MapAll runs one of
// its workers in the calling goroutine, so an f that calls runtime.Goexit
// there ends the caller too, as it asked, once the other calls have
// returned.
//
// MapAll panics if ctx or f is nil or limit is negative.
func MapAll[T, R any](ctx context.Context, items []T, limit int, f func(ctx context.Context, item T) (R, error)) ([]R, []error) {
	checkMap(ctx, limit, f == nil, "MapAll")
	m := &mapper[T, R]{items: items, results: make([]R, len(items)), f: f}
	if len(items) == 0 {
		return m.results, nil
	}
	m.errs = make([]error, len(items))
	if ctx.Err() == nil {
		g, _ := New(ctx, Options{CollectAll: true})
		m.start(g, limit, m.every)
		g.Wait() // the workers return no error: only a panic comes out
	}
	// The workers gave every item its outcome, unless ctx was done at once.
	for i := min(int(m.next.Load()), len(items)); i < len(items); i++ {
		m.errs[i] = ctx.Err()
		m.failed.Store(true)
	}
	if !m.failed.Load() {
		return m.results, nil
	}
	return m.results, m.errs
}

// ForEach processes a stream: it pulls items from seq one by one, in the
// caller's goroutine, and runs f on each in a goroutine, at most limit at once
// (0: no limit). It takes the slot for an item before it pulls the item, so it
// never pulls an item it has no slot for, and an endless seq is fine.
//
// ForEach stops pulling at the first error of f, which cancels the context
// that f receives, or when ctx ends. Either way it waits for the items in
// flight before it returns, and returns the first error, or ctx.Err() when ctx
// ended first, also when seq stopped as ctx ended (q.All(ctx) does: ForEach
// cannot tell that from a seq that ran out); nil if seq ran out and every
// call succeeded. A panic in f is raised again by ForEach as a *PanicError,
// as Wait does, and a call of f that ends in runtime.Goexit fails with
// ErrGoexit; a panic in seq goes on up once the items in flight have
// returned. ForEach cannot interrupt seq itself: an iterator that may block
// waiting for its next item should watch ctx too. And when f fails while
// ForEach waits in such a pull, ForEach returns only once seq yields again
// or ends: the example below ends its pull at the first failure.
//
// No item that ForEach pulls is dropped: f gets every one. An item that seq
// yields after ctx ended or a call failed, while ForEach was pulling it, goes
// to f with its context already done, so that f sees it and can finish it,
// give it back or mark it undone, as it would an item whose context ended
// while f ran. So a stream whose items must each be accounted for, as a
// ctxsync.Queue's with Join, can be drained by ForEach and shut down. The
// queue is pulled under a ctx of its own, which the first failure ends: an
// idle queue's All would wait for the next job on ctx alone.
//
//	pull, stop := context.WithCancel(ctx)
//	defer stop()
//	err := group.ForEach(ctx, q.All(pull), 8, func(ctx context.Context, job Job) error {
//		defer q.TaskDone()
//		err := handle(ctx, job) // or save job for later if ctx is done
//		if err != nil {
//			stop() // ends the pull under way: ForEach returns err
//		}
//		return err
//	})
//	for _, job := range q.CloseNow() { // the jobs ForEach did not pull
//		saveForLater(job)
//	}
//
// ForEach panics if ctx, seq or f is nil or limit is negative.
func ForEach[T any](ctx context.Context, seq iter.Seq[T], limit int, f func(ctx context.Context, item T) error) error {
	checkMap(ctx, limit, f == nil, "ForEach")
	if seq == nil {
		panic("group: ForEach with nil seq")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g, _ := New(ctx, Options{Limit: limit})
	pulling, reserved := true, false
	defer func() {
		if pulling {
			// seq panicked (or called runtime.Goexit): no goroutine
			// outlives ForEach, so stop the items in flight and wait for
			// them while seq's panic goes on up.
			if reserved {
				g.unreserve()
			}
			g.cancel(nil)
			g.waitTasks()
		}
	}()
	// The slot for the next item is taken before that item is pulled: an
	// item pulled and then refused a slot, since ctx had ended meanwhile,
	// would be lost, and a queue's Join would wait for it for ever.
	reserved = g.reserve() == nil
	if reserved {
		for item := range seq {
			reserved = false
			g.start(func(ctx context.Context) error { return f(ctx, item) })
			if g.reserve() != nil {
				break // the first error, or the end of ctx
			}
			reserved = true
		}
	}
	pulling = false
	// ctx ended if a slot was refused, or perhaps seq stopped because it
	// did (q.All(ctx) does): ForEach cannot tell it from a seq that ran out.
	stopped := !reserved || ctx.Err() != nil
	if reserved {
		g.unreserve()
	}
	err := g.Wait()
	if (err == nil && stopped) || (err != nil && !g.errLive) {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
	}
	return err
}

// mapper is the state that the worker goroutines of Map and MapAll share.
type mapper[T, R any] struct {
	items   []T
	results []R
	errs    []error // MapAll's
	f       func(ctx context.Context, item T) (R, error)
	next    atomic.Int64 // the index of the next item to take
	stopped atomic.Bool  // Map: ctx ended with items left
	failed  atomic.Bool  // MapAll: some item has an error

	g       *Group
	work    func(ctx context.Context) error // the worker, one func value for all
	workers atomic.Int64                    // started, or about to start

	most int64
}

// start runs work in the calling goroutine, as the first worker, which
// starts the others as it goes (see take).
func (m *mapper[T, R]) start(g *Group, limit int, work func(ctx context.Context) error) {
	m.g, m.work, m.most = g, work, int64(len(m.items))
	if limit > 0 && limit < len(m.items) {
		m.most = int64(limit)
	}
	m.workers.Store(1)
	g.runHere(work)
}

// take returns the index of the next item, or false when none is left.
//
// The first time a worker takes an item with more left after it (handed is
// false), it starts one more worker, while fewer than most run: a worker on
// its way to a slow item has a partner take the next one. Workers so start
// one another in a chain, one goroutine start apart: slow items have every
// worker busy within microseconds, while quick items are all taken by the
// first worker or two before the chain gets far, and start few goroutines.
// Starting every worker at once would cost a goroutine each, whatever the
// items.
func (m *mapper[T, R]) take(handed *bool) (int, bool) {
	i := m.next.Add(1) - 1
	if i >= int64(len(m.items)) {
		return 0, false
	}
	if !*handed && i+1 < int64(len(m.items)) {
		*handed = true
		if m.workers.Add(1) <= m.most {
			// Refused only when ctx has ended, which the workers see.
			_ = m.g.Go(m.work)
		}
	}
	return int(i), true
}

// firstError is a Map worker: it stops at the first error, its own or
// another's, since that error cancels ctx.
func (m *mapper[T, R]) firstError(ctx context.Context) error {
	handed := false
	for {
		i, ok := m.take(&handed)
		if !ok {
			return nil
		}
		if ctx.Err() != nil {
			m.stopped.Store(true)
			return nil // the failure, if any, is already recorded
		}
		r, err := m.f(ctx, m.items[i])
		if err != nil {
			return err
		}
		m.results[i] = r
	}
}

// every is a MapAll worker: it runs every item it takes, while ctx lasts.
func (m *mapper[T, R]) every(ctx context.Context) error {
	handed := false
	running := -1 // the item whose f has not returned
	defer func() {
		// f did not return: it called runtime.Goexit, which ends this
		// worker, and the item failed. (Or f panicked, which MapAll raises
		// instead of returning errs.) The other workers go on with the
		// items left.
		if running >= 0 {
			m.errs[running] = ErrGoexit
			m.failed.Store(true)
		}
	}()
	for {
		i, ok := m.take(&handed)
		if !ok {
			return nil
		}
		if err := ctx.Err(); err != nil {
			m.errs[i] = err
			m.failed.Store(true)
			continue
		}
		running = i
		r, err := m.f(ctx, m.items[i])
		running = -1
		m.results[i] = r
		if err != nil {
			m.errs[i] = err
			m.failed.Store(true)
		}
	}
}

// checkMap panics on the misuses common to Map, MapAll and ForEach.
func checkMap(ctx context.Context, limit int, nilF bool, name string) {
	checkCtx(ctx)
	if nilF {
		panic("group: " + name + " with nil function")
	}
	if limit < 0 {
		panic("group: " + name + " with negative limit")
	}
}
