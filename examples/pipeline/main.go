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
	"github.com/ctxsync/ctxsync/examples/internal/timeline"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	tl := timeline.New(w)
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
