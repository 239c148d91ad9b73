// Command pipeline passes jobs from a producer to three consumers through a
// Queue of capacity 2: when the consumers fall behind, Put waits
// (backpressure). Join waits until every job has been processed, not merely
// taken.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	ctx := context.Background()
	jobs := ctxsync.NewQueue[string](2)

	var wg sync.WaitGroup
	for i, cost := range []time.Duration{30 * time.Millisecond, 45 * time.Millisecond, 70 * time.Millisecond} {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * time.Millisecond) // start a little apart
			for job := range jobs.All(ctx) {                // until closed and drained
				tl.Printf("consumer %d processes %s", i+1, job)
				time.Sleep(cost)
				jobs.TaskDone()
			}
		})
	}

	for n := 1; n <= 8; n++ {
		job := fmt.Sprintf("job-%d", n)
		if jobs.Len() == 2 {
			tl.Printf("producer: the queue is full, %s waits", job)
		}
		if err := jobs.Put(ctx, job); err != nil {
			return
		}
		tl.Printf("producer queued %s", job)
		time.Sleep(3 * time.Millisecond)
	}
	if err := jobs.Join(ctx); err == nil {
		tl.Printf("producer: Join returned, every job is processed")
	}
	jobs.Close() // the consumers' loops end
	wg.Wait()
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
