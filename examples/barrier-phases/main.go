// Command barrier-phases keeps three workers in step with a Barrier: each
// phase starts only when all three have finished the one before, and an
// action runs once per phase, in the last worker to arrive, before any is
// let through.
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
