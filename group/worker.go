package group

import "context"

// The tasks of a Group run in goroutines of the group, its workers.
//
// Starting a goroutine for each task, as errgroup does, is most of what a
// group of short tasks costs: creating the goroutine, waking a processor for
// it, and tearing it down. So a worker whose task has returned takes the next
// task waiting to start, if there is one, before it ends: a group of 16 quick
// tasks starts two or three goroutines, not 16.
//
// A task must never wait for its goroutine behind another task, which may
// run for ever (tasks often wait for one another). So, while a task waits in
// the queue, a fresh worker (a goroutine started and not yet given a task,
// which nothing of the user's can block) is always on its way to it:
//
//   - start queues f and starts a fresh worker, unless one is on its way;
//   - a fresh worker that takes a task while more wait starts the next fresh
//     worker before it runs its task, and one that takes the last task, or
//     finds none, leaves none on its way, and needs to leave none.
//
// Tasks that block so start one another a goroutine start apart, and each
// worker that finishes a task takes the next, as on a goroutine of its own.
//
// A fresh worker counts among the group's tasks until it takes a task or
// ends, so that Wait does not return before it has run: no goroutine that the
// group started outlives Wait, but for the few instructions a worker runs
// after its last task has returned.

// start runs f as the task reserved, whatever the state of the group's ctx
// by now (f sees it), in a goroutine of the group. Tasks start in the order
// they came to start.
func (g *Group) start(f func(ctx context.Context) error) {
	g.qmu.Lock()
	if len(g.queue) == cap(g.queue) && cap(g.queue) == len(g.qbuf) {
		// The queue outgrows qbuf: append copies the tasks waiting to a new
		// array, and qbuf's copies would keep their closures alive.
		g.queue = append(g.queue, f)
		clear(g.qbuf[:])
	} else {
		g.queue = append(g.queue, f)
	}
	spawn := !g.pending
	g.pending = true
	g.qmu.Unlock()
	if spawn {
		g.tasks.Add(1) // the fresh worker's
		go g.worker()
	}
}

// worker is the body of a goroutine of the group: it takes the tasks
// waiting, one after the other, while there are any.
func (g *Group) worker() {
	fresh := true
	for {
		f, spawn := g.take(fresh)
		if spawn {
			g.tasks.Add(1)
			go g.worker()
		}
		if fresh {
			// Released after spawn's count is taken, and as the task taken
			// counts already: the count does not touch 0 on the way.
			g.taskDone()
			fresh = false
		}
		if f == nil {
			return
		}
		// A task that calls runtime.Goexit ends this goroutine here; run
		// has settled the task, and a fresh worker is on its way to any
		// task left.
		g.run(f)
	}
}

// take removes the next task from the queue, or returns nil if none waits.
// A fresh worker learns whether it must start the next fresh worker, as
// tasks are left for one.
func (g *Group) take(fresh bool) (f func(ctx context.Context) error, spawn bool) {
	g.qmu.Lock()
	if g.head < len(g.queue) {
		f = g.queue[g.head]
		g.queue[g.head] = nil // the task's closure is not kept alive by the queue
		g.head++
	}
	if g.head == len(g.queue) {
		g.head = 0
		g.queue = g.queue[:0]
		if cap(g.queue) > 256 {
			// A burst of tasks grew the queue: give its memory back.
			g.queue = g.qbuf[:0]
		}
		if fresh {
			g.pending = false
		}
	} else if fresh {
		spawn = true // pending stays true: for the worker to start
	}
	g.qmu.Unlock()
	return f, spawn
}
