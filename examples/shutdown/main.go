// Command shutdown stops workers with an Event: each selects on its Done
// channel beside its own work, and ends when the Event is set.
package main

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/examples/internal/timeline"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	tl := timeline.New(w)
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
