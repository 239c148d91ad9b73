// Command rwlock-cache is a read-mostly cache guarded by an RWLock: readers
// share it, and an occasional writer that rebuilds it has it to itself. The
// writer waits for the reader inside to finish; a reader that comes while the
// writer waits or writes waits its turn, so the writer is never starved.
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

// cache maps keys to values; mu guards it.
type cache struct {
	mu      ctxsync.RWLock // the zero value is ready to use
	version int
}

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	ctx := context.Background()
	c := &cache{version: 1}

	var wg sync.WaitGroup
	for i, offset := range []time.Duration{0, 15 * time.Millisecond} {
		wg.Go(func() {
			time.Sleep(offset)
			for range 5 {
				// TryRLock fails only while a writer holds the lock or waits
				// for it: then, and only then, this reader waits for a writer.
				if c.mu.TryRLock() {
					tl.Printf("reader %d reads version %d", i+1, c.version)
				} else {
					asked := time.Now()
					if err := c.mu.RLock(ctx); err != nil {
						return // ctx ended while it waited
					}
					tl.Printf("reader %d reads version %d (it waited %v for the writer)",
						i+1, c.version, time.Since(asked).Round(time.Millisecond))
				}
				time.Sleep(10 * time.Millisecond) // reading
				c.mu.RUnlock()
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		time.Sleep(95 * time.Millisecond)
		tl.Printf("writer: the source changed; it waits for the reader inside")
		if err := c.mu.Lock(ctx); err != nil {
			return
		}
		tl.Printf("writer rebuilds the cache")
		time.Sleep(12 * time.Millisecond)
		c.version++
		tl.Printf("writer is done: version %d", c.version)
		c.mu.Unlock()
	})
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
