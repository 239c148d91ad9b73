// Command token-bucket sends 20 requests through a token bucket of rate 10
// per second and burst 5: the first 5 go at once, then one every 100
// milliseconds, the last at 1.5 seconds.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync/ratelimit"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	limiter := ratelimit.NewTokenBucket(10, 5) // 10 per second, bursts of 5
	ctx := context.Background()
	for i := 1; i <= 20; i++ {
		if err := limiter.Wait(ctx); err != nil {
			return
		}
		tl.Printf("request %2d sent (tokens left: %.0f)", i, limiter.Tokens())
	}
	tl.Println("5 at once from the full bucket, then the steady rate: all 20 in 1.5s.")
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
