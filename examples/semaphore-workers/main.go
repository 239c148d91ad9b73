// Command semaphore-workers shows a Semaphore bounding concurrency: four
// workers share two permits. At most two work at once, and the permits go to
// the workers in the order they asked.
package main

import (
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/examples/internal/timeline"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	tl := timeline.New(w)
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
