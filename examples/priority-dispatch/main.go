// Command priority-dispatch hands tasks to two workers through a
// PriorityQueue: urgent tasks first whatever order they were queued in, and
// tasks of equal urgency first in, first out.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync"
)

func main() { run(os.Stdout) }

type task struct {
	name string
	prio int           // lower is more urgent
	cost time.Duration // how long it takes
}

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	ctx := context.Background()
	q := ctxsync.NewPriorityQueue[task](0) // unbounded

	for _, t := range []task{
		{"resize image 1", 2, 30 * time.Millisecond},
		{"send receipt", 1, 20 * time.Millisecond},
		{"resize image 2", 2, 30 * time.Millisecond},
		{"page the on-call engineer", 0, 10 * time.Millisecond},
		{"rebuild search index", 3, 50 * time.Millisecond},
		{"send password reset", 1, 20 * time.Millisecond},
	} {
		// An unbounded queue, open, and a ctx that never ends: Put cannot
		// fail here. With a bounded queue or a ctx that can end, check it.
		_ = q.Put(ctx, t.prio, t)
	}
	tl.Printf("queued %d tasks", q.Len())
	q.Close() // nothing more will come: the workers stop once it is drained

	var wg sync.WaitGroup
	for i := 1; i <= 2; i++ {
		wg.Go(func() {
			time.Sleep(time.Duration(5*(i-1)) * time.Millisecond)
			work(ctx, tl, i, q)
		})
	}
	wg.Wait()
	tl.Printf("all tasks done")
}

// work runs tasks from q until it is closed and drained, or ctx ends.
func work(ctx context.Context, tl *timeline, id int, q *ctxsync.PriorityQueue[task]) {
	for {
		t, err := q.Get(ctx)
		if err != nil {
			// ErrClosed: the queue is closed and drained. ctx.Err(): the
			// caller gave up. Either way t is a zero task and the worker is
			// done; looping on would spin.
			if !errors.Is(err, ctxsync.ErrClosed) {
				tl.Printf("worker %d stops: %v", id, err)
			}
			return
		}
		tl.Printf("worker %d starts %q (priority %d)", id, t.name, t.prio)
		time.Sleep(t.cost)
	}
}

// A timeline prints the story one line per event, stamped with the time since
// it began, rounded to unit. The example's test runs it in a testing/synctest
// bubble, where time is virtual and the stamps exact. It is safe for
// concurrent use.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	unit  time.Duration
}

func newTimeline(w io.Writer, unit time.Duration) *timeline {
	return &timeline{w: w, start: time.Now(), unit: unit}
}

// Printf prints one line, stamped.
func (t *timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Round(t.unit).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}
