// Command semaphore-workers shows a Semaphore bounding concurrency: four
// workers share two permits. At most two work at once, and the permits go to
// the workers in the order they asked.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	sem := ctxsync.NewSemaphore(2) // two permits: at most two workers at once
	ctx := context.Background()
	var working atomic.Int32

	var wg sync.WaitGroup
	for i := 1; i <= 4; i++ {
		wg.Go(func() {
			tl.Printf("worker %d waits for a permit", i)
			if err := sem.Acquire(ctx); err != nil {
				return // only if ctx ended
			}
			tl.Printf("worker %d has a permit (%d working)", i, working.Add(1))
			time.Sleep(time.Duration(100*i) * time.Millisecond) // the work
			working.Add(-1)
			tl.Printf("worker %d is done and releases its permit", i)
			sem.Release()
		})
		time.Sleep(10 * time.Millisecond) // the workers arrive in order
	}
	wg.Wait()
	tl.Println("Never more than two at once, and worker 3 went before worker 4, as they asked.")
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

// Println prints a line without a stamp.
func (t *timeline) Println(args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.w, args...)
}
