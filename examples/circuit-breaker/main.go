// Command circuit-breaker calls a flaky service through a circuit breaker.
// Three failures in a row open it: calls are then refused at once, without
// reaching the service. After the open time, one trial call goes through; it
// fails while the service is still down, and the breaker opens again; once the
// service is back, a trial succeeds and the breaker closes.
package main

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/examples/internal/timeline"
)

func main() { run(os.Stdout) }

var errDown = errors.New("503 service unavailable")

func run(w io.Writer) {
	tl := timeline.New(w)
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
