package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
)

var errUnavailable = errors.New("service unavailable")

// A breaker stops calls to a failing dependency: after three failures it
// refuses calls at once, without making them.
func ExampleBreaker() {
	b := breaker.New(breaker.Settings{
		FailureThreshold: 3,
		OpenTimeout:      time.Minute,
		OnStateChange: func(from, to breaker.State, _ breaker.Counts) {
			fmt.Println("breaker:", from, "->", to)
		},
	})
	callService := func(context.Context) error { return errUnavailable }

	ctx := context.Background()
	for i := range 5 {
		err := b.Execute(ctx, callService)
		fmt.Printf("call %d: refused %t, %v\n", i, errors.Is(err, breaker.ErrOpen), errors.Unwrap(err) == nil)
	}
	// Output:
	// call 0: refused false, true
	// call 1: refused false, true
	// breaker: closed -> open
	// call 2: refused false, true
	// call 3: refused true, true
	// call 4: refused true, true
}

// Settings{} is a working breaker: five consecutive failures open it for 30
// seconds. Rate rules open it on a share of failures, or of slow calls, in a
// window of recent calls.
func ExampleNew() {
	b := breaker.New(breaker.Settings{
		Name:                  "payments",
		FailureRateThreshold:  50,              // half the calls failed,
		SlowCallDuration:      2 * time.Second, // or
		SlowCallRateThreshold: 80,              // most were slow,
		WindowSize:            100,             // among the last 100,
		MinimumCalls:          20,              // once there are 20,
		OpenBackoff:           breaker.ExponentialBackoff(5*time.Second, 5*time.Minute),
		Jitter:                0.2,
	})
	fmt.Println(b.State(), b.Metrics().Name)
	// Output: closed payments
}

// Do returns the result of a call through the breaker.
func ExampleDo() {
	b := breaker.New(breaker.Settings{})
	price, err := breaker.Do(context.Background(), b, func(context.Context) (float64, error) {
		return 9.99, nil
	})
	fmt.Println(price, err)
	// Output: 9.99 <nil>
}

// Allow is for code that cannot wrap the call in a function: an HTTP client
// middleware, say, that learns the outcome later.
func ExampleBreaker_Allow() {
	b := breaker.New(breaker.Settings{FailureThreshold: 1})
	done, err := b.Allow(context.Background())
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	// ... make the call ...
	done(errUnavailable) // report its outcome, exactly once
	_, err = b.Allow(context.Background())
	fmt.Println(errors.Is(err, breaker.ErrOpen))
	// Output: true
}

// An *OpenError says when to try again.
func ExampleOpenError() {
	b := breaker.New(breaker.Settings{Name: "search"})
	b.ForceOpen()
	err := b.Execute(context.Background(), func(context.Context) error { return nil })
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		fmt.Println(oe.Name, oe.State, oe.RetryAfter().Round(time.Second))
	}
	// Output: search open 30s
}

func ExampleState() {
	for _, s := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
		fmt.Println(s)
	}
	// Output:
	// closed
	// open
	// half-open
}

// Counts and Metrics show what the breaker has seen.
func ExampleMetrics() {
	b := breaker.New(breaker.Settings{})
	ctx := context.Background()
	_ = b.Execute(ctx, func(context.Context) error { return nil })
	_ = b.Execute(ctx, func(context.Context) error { return errUnavailable })
	_ = b.Execute(ctx, func(context.Context) error { return context.Canceled }) // ignored
	m := b.Metrics()
	fmt.Printf("%+v\n", m.Counts)
	// Output: {Requests:3 Successes:1 Failures:1 Ignored:1 Rejected:0 Slow:0 ConsecutiveSuccesses:0 ConsecutiveFailures:1}
}

// Disable lets every call through while still counting: to watch what a new
// configuration would do before trusting it.
func ExampleBreaker_Disable() {
	b := breaker.New(breaker.Settings{FailureThreshold: 1})
	b.Disable()
	for range 3 {
		_ = b.Execute(context.Background(), func(context.Context) error { return errUnavailable })
	}
	fmt.Println(b.State(), b.Counts().Failures)
	// Output: closed 3
}

func ExampleExponentialBackoff() {
	backoff := breaker.ExponentialBackoff(time.Second, 10*time.Second)
	for n := 1; n <= 5; n++ {
		fmt.Print(backoff(n), " ")
	}
	fmt.Println()
	// Output: 1s 2s 4s 8s 10s
}

// Counts are reported to OnStateChange with each change of state.
func ExampleCounts() {
	b := breaker.New(breaker.Settings{
		FailureThreshold: 2,
		OnStateChange: func(from, to breaker.State, c breaker.Counts) {
			fmt.Printf("%v -> %v after %d failures of %d calls\n", from, to, c.Failures, c.Requests)
		},
	})
	for _, err := range []error{nil, errUnavailable, errUnavailable} {
		_ = b.Execute(context.Background(), func(context.Context) error { return err })
	}
	// Output: closed -> open after 2 failures of 3 calls
}

// IsFailure and IsIgnored say what an error means for the dependency: here a
// "not found" is the caller's business, not a failure of the service, and a
// canceled call (ignored by default) counts neither way.
func ExampleSettings() {
	errNotFound := errors.New("not found")
	b := breaker.New(breaker.Settings{
		FailureThreshold: 2,
		IsFailure:        func(err error) bool { return err != nil && !errors.Is(err, errNotFound) },
	})
	ctx := context.Background()
	for _, err := range []error{errNotFound, errNotFound, context.Canceled, errUnavailable} {
		_ = b.Execute(ctx, func(context.Context) error { return err })
	}
	c := b.Counts()
	fmt.Println(b.State(), "successes", c.Successes, "failures", c.Failures, "ignored", c.Ignored)
	// Output: closed successes 2 failures 1 ignored 1
}
