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
// returned. If ctx ends before any call fails, Map returns ctx.Err() and nil
// results; a ctx that is already done runs nothing. A panic in f is raised
// again by Map as a *PanicError, as Wait does.
//
// Items are started in their order. Map starts min(limit, len(items))
// goroutines, each of which takes the next item as it finishes one, so a
// limit costs no goroutine per item.
//
// Map panics if ctx or f is nil or limit is negative.
func Map[T, R any](ctx context.Context, items []T, limit int, f func(ctx context.Context, item T) (R, error)) ([]R, error) {
	checkMap(ctx, limit, f == nil, "Map")
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := &mapper[T, R]{items: items, results: make([]R, len(items)), f: f}
	g, _ := New(ctx, Options{})
	work := m.firstError // one func value for every worker
	for range workers(len(items), limit) {
		if g.Go(work) != nil {
			m.stopped.Store(true) // ctx ended: items may be left
			break
		}
	}
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
// nothing. A panic in f cancels the rest and is raised again by MapAll as a
// *PanicError, as Wait does.
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
		work := m.every
		for range workers(len(items), limit) {
			if g.Go(work) != nil {
				break // ctx ended: what is left gets its error below
			}
		}
		g.Wait() // the workers return no error: only a panic comes out
	}
	// Every item a worker took has its outcome. Left are those of a ctx
	// that ended before any worker started.
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
// (0: no limit). It pulls an item only when fewer than limit are in flight or
// while it waits for a slot for that one item, so it never pulls more than
// one item ahead of its free slots, and an endless seq is fine.
//
// ForEach stops pulling at the first error of f, which cancels the context
// that f receives, or when ctx ends. Either way it waits for the items in
// flight before it returns, and returns the first error, or ctx.Err() when ctx
// ended first; nil if seq ran out and every call succeeded. A panic in f is
// raised again by ForEach as a *PanicError, as Wait does; a panic in seq goes
// on up once the items in flight have returned.
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
	pulling := true
	defer func() {
		if pulling {
			// seq panicked (or called runtime.Goexit): no goroutine
			// outlives ForEach, so stop the items in flight and wait for
			// them while seq's panic goes on up.
			g.cancel(nil)
			g.wg.Wait()
		}
	}()
	refused := false
	for item := range seq {
		if g.Go(func(ctx context.Context) error { return f(ctx, item) }) != nil {
			refused = true // the first error, or the end of ctx
			break
		}
	}
	pulling = false
	err := g.Wait()
	if (err == nil && refused) || (err != nil && !g.errLive) {
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
}

// take returns the index of the next item, or false when none is left.
func (m *mapper[T, R]) take() (int, bool) {
	i := m.next.Add(1) - 1
	return int(i), i < int64(len(m.items))
}

// firstError is a Map worker: it stops at the first error, its own or
// another's, since that error cancels ctx.
func (m *mapper[T, R]) firstError(ctx context.Context) error {
	for {
		i, ok := m.take()
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
	for {
		i, ok := m.take()
		if !ok {
			return nil
		}
		if err := ctx.Err(); err != nil {
			m.errs[i] = err
			m.failed.Store(true)
			continue
		}
		r, err := m.f(ctx, m.items[i])
		m.results[i] = r
		if err != nil {
			m.errs[i] = err
			m.failed.Store(true)
		}
	}
}

// workers returns how many goroutines Map and MapAll start for n items.
func workers(n, limit int) int {
	if limit > 0 && limit < n {
		return limit
	}
	return n
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
