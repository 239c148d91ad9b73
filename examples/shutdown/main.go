// Command shutdown stops workers with an Event: each selects on its Done
// channel beside its own work, and ends when the Event is set.
package main

import (
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
	var shutdown ctxsync.Event // the zero Event is unset, ready to use

	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		wg.Go(func() {
			time.Sleep(time.Duration(10*i) * time.Millisecond) // start a little apart
			ticker := time.NewTicker(100 * time.Millisecond)
			defer ticker.Stop()
			for {
				select {
				case <-shutdown.Done():
					// Finish the job at hand, which takes a little while.
					time.Sleep(time.Duration(5*i) * time.Millisecond)
					tl.Printf("worker %d has stopped", i)
					return
				case <-ticker.C:
					tl.Printf("worker %d does a job", i)
				}
			}
		})
	}
	time.Sleep(250 * time.Millisecond)
	tl.Printf("shutting down")
	shutdown.Set() // every worker sees it
	wg.Wait()
	tl.Printf("all workers stopped; shutdown.IsSet() = %t", shutdown.IsSet())
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
