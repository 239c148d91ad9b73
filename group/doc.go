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
// When Go refuses a task because the group's context has ended, f never runs
// and the group keeps nothing of it: a job the caller took from a queue for f
// is still in the caller's hands, to give back or save, or it is lost.
//
// Map, MapAll and ForEach cover the common shapes: results in order with the
// first error, every result and every error at its index, and a stream pulled
// lazily from an iterator. None of them, nor Wait, returns before every
// goroutine it started has returned. ForEach takes a slot before it pulls an
// item, and gives f every item it pulls, even one that seq yields as ctx ends
// (f then gets a context already done): so ForEach over a ctxsync.Queue's All
// drops no job at shutdown, and the jobs it did not pull stay in the queue,
// for CloseNow to hand back.
//
// Tasks run in goroutines that the group starts as tasks come: a goroutine
// whose task has returned takes the next task waiting, instead of ending, so a
// group of short tasks costs a few goroutines, not one per task; no task waits
// behind another that runs. A task therefore leaves no state in its goroutine
// (a locked OS thread, goroutine labels) for the next one: see Group.Go.
//
// The package uses no timers, and no goroutines but those that run tasks, so
// it works inside testing/synctest bubbles, on their virtual time (see Group
// for the hand-overs between a bubble and the outside that it refuses).
package group
