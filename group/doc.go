// Package group runs a task's goroutines together and waits for them: the
// structured concurrency of Python's asyncio.TaskGroup and asyncio.gather,
// with the habits of golang.org/x/sync/errgroup and what it leaves out.
//
//	g, ctx := group.New(ctx, group.Options{Limit: 8})
//	for _, url := range urls {
//		if err := g.Go(func(ctx context.Context) error { return fetch(ctx, url) }); err != nil {
//			break // the group's ctx ended: a fetch failed, or ctx did
//		}
//	}
//	err := g.Wait()
//
// By default a group fails fast: the first error cancels the group's context,
// so the other tasks can stop, and it is what Wait returns. With CollectAll,
// every task runs to its end and Wait returns all their errors joined.
//
// Go waits, first in first out, for a slot when Limit tasks run, and gives up
// when the group's context ends: a task that fails cancels the context before
// its slot is freed, so no task starts after a failure. A task that panics
// cancels the group too, and Wait panics again with a *PanicError that carries
// the value and the task's stack, in the goroutine that called Wait, where a
// deferred recover can see it.
//
// Map, MapAll and ForEach cover the common shapes: results in order with the
// first error, every result and every error at its index, and a stream pulled
// lazily from an iterator. None of them, nor Wait, returns before every
// goroutine it started has returned.
//
// The package uses no timers and no goroutines of its own, so it works inside
// testing/synctest bubbles, on their virtual time (see Group for the one
// hand-over between a bubble and the outside that the runtime refuses).
package group
