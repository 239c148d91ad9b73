// Command pipeline passes jobs from a producer to three consumers through a
// Queue of capacity 2: when the consumers fall behind, Put waits
// (backpressure). Join waits until every job has been processed, not merely
// taken.
//
// Then a shutdown comes while a second batch is under way: the producer and
// the consumers share a ctx that it cancels. The producer stops queueing, each
// consumer finishes the job in hand and stops, CloseNow hands back the jobs
// still queued so that none is lost, and Join, bounded by a deadline, returns
// once the jobs taken are done.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	// The pipeline runs until shutdown cancels ctx. A real service would
	// take it from signal.NotifyContext(context.Background(), os.Interrupt);
	// here the shutdown comes at 200ms.
	ctx, shutdown := context.WithCancel(context.Background())
	defer shutdown()
	time.AfterFunc(200*time.Millisecond, func() {
		tl.Printf("shutdown: stop taking new jobs")
		shutdown()
	})
	jobs := ctxsync.NewQueue[string](2)

	var wg sync.WaitGroup
	for i, cost := range []time.Duration{30 * time.Millisecond, 45 * time.Millisecond, 70 * time.Millisecond} {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * time.Millisecond) // start a little apart
			// Until ctx ends (the job in hand is finished first), or the
			// queue is closed and drained.
			for job := range jobs.All(ctx) {
				tl.Printf("consumer %d processes %s", i+1, job)
				time.Sleep(cost)
				jobs.TaskDone()
			}
			tl.Printf("consumer %d stops", i+1)
		})
	}

	for n := 1; n <= 16; n++ {
		job := fmt.Sprintf("job-%d", n)
		if jobs.Len() == 2 {
			tl.Printf("producer: the queue is full, %s waits", job)
		}
		if err := jobs.Put(ctx, job); err != nil {
			tl.Printf("producer: %s not queued: %v", job, err)
			break
		}
		tl.Printf("producer queued %s", job)
		time.Sleep(3 * time.Millisecond)
		if n == 8 {
			// The first batch: Join waits until every job is processed.
			if err := jobs.Join(ctx); err == nil {
				tl.Printf("producer: Join returned, every job is processed")
			}
		}
	}

	// The graceful drain. The consumers have finished their jobs in hand;
	// the jobs still queued are handed back, to be saved for the next run
	// (nothing is dropped unseen), and Join then waits only for the jobs the
	// consumers took, for at most a second.
	wg.Wait()
	left := jobs.CloseNow()
	tl.Printf("shutdown: %d jobs handed back, saved for the next run: %s", len(left), strings.Join(left, ", "))
	drain, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := jobs.Join(drain); err != nil {
		tl.Printf("shutdown: jobs still unfinished: %v", err)
		return
	}
	tl.Printf("shutdown: every job taken is done")
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
