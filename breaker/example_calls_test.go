package breaker_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxsync/ctxsync/breaker"
)

// OnCall tells each call's outcome and duration, for metrics: a histogram
// of call durations by outcome, say. Here it only prints the outcomes.
func ExampleCallEvent() {
	b := breaker.New(breaker.Settings{
		FailureThreshold: 1,
		OnCall: func(e breaker.CallEvent) {
			fmt.Println(e.Outcome, "in state", e.State)
		},
	})
	ctx := context.Background()
	_ = b.Execute(ctx, func(context.Context) error { return nil })
	_ = b.Execute(ctx, func(context.Context) error { return context.Canceled })
	_ = b.Execute(ctx, func(context.Context) error { return errors.New("down") })
	_ = b.Execute(ctx, func(context.Context) error { return nil })
	// Output:
	// success in state closed
	// ignored in state closed
	// failure in state closed
	// rejected in state open
}

// Each Outcome has a word fit for a metric's label.
func ExampleOutcome() {
	for _, o := range []breaker.Outcome{breaker.Success, breaker.Failure, breaker.Ignored, breaker.Rejected} {
		fmt.Println(o)
	}
	// Output:
	// success
	// failure
	// ignored
	// rejected
}
