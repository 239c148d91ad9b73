// Command barrier-phases keeps three workers in step with a Barrier: each
// phase starts only when all three have finished the one before, and an
// action runs once per phase, in the last worker to arrive, before any is
// let through.
package main

import (
	"context"
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
	phase := 1
	b := ctxsync.NewBarrier(3, func() error {
		tl.Printf("-- phase %d is complete: all three arrived (the action runs once) --", phase)
		phase++
		return nil
	})

	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		wg.Go(func() {
			for p := 1; p <= 2; p++ {
				time.Sleep(time.Duration(20*i) * time.Millisecond) // this worker's share
				tl.Printf("worker %d finished phase %d and waits for the others", i, p)
				if _, err := b.Wait(context.Background()); err != nil {
					tl.Printf("worker %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	tl.Println("The slowest worker set the pace: no one started phase 2 before all finished phase 1.")
}
