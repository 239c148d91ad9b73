// Command circuit-breaker calls a flaky service through a circuit breaker.
// Three failures in a row open it: calls are then refused at once, without
// reaching the service. After the open time, one trial call goes through; it
// fails while the service is still down, and the breaker opens again; once the
// service is back, a trial succeeds and the breaker closes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
)

func main() { run(os.Stdout) }

var errDown = errors.New("503 service unavailable")

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	start := time.Now()
	// The service fails until 2s, then works.
	service := func(context.Context) error {
		if time.Since(start) < 2*time.Second {
			return errDown
		}
		return nil
	}
	b := breaker.New(breaker.Settings{
		Name:             "service",
		FailureThreshold: 3,
		OpenTimeout:      time.Second,
		OnStateChange: func(from, to breaker.State, c breaker.Counts) {
			tl.Printf("   breaker: %s -> %s", from, to)
		},
	})

	ctx := context.Background()
	for i := 1; i <= 13; i++ {
		err := b.Execute(ctx, service)
		var refused *breaker.OpenError
		switch {
		case errors.As(err, &refused):
			tl.Printf("call %2d refused at once, retry in %v", i, refused.RetryAfter().Round(time.Millisecond))
		case err != nil:
			tl.Printf("call %2d failed: %v", i, err)
		default:
			tl.Printf("call %2d succeeded", i)
		}
		time.Sleep(300 * time.Millisecond)
	}
	m := b.Metrics()
	tl.Printf("in all: %d calls made, %d failed, %d refused without a call",
		m.Total.Requests, m.Total.Failures, m.Total.Rejected)
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
