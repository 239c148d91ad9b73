package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ctxsync/ctxsync/retry"
)

// A Policy retries a call that fails for a while. Here NoDelay retries at
// once, to keep the example quick; the zero Policy would wait up to 100ms,
// then up to 200ms, and so on.
func ExamplePolicy() {
	p := retry.Policy{
		MaxAttempts: 5,
		NoDelay:     true,
		OnRetry: func(attempt int, err error, delay time.Duration) {
			fmt.Printf("attempt %d failed (%v), next in %v\n", attempt, err, delay)
		},
	}
	calls := 0
	err := p.Execute(context.Background(), func(ctx context.Context) error {
		calls++
		if calls < 4 {
			return errors.New("connection refused")
		}
		return nil
	})
	fmt.Println("result:", err, "after", calls, "attempts")
	// Output:
	// attempt 1 failed (connection refused), next in 0s
	// attempt 2 failed (connection refused), next in 0s
	// attempt 3 failed (connection refused), next in 0s
	// result: <nil> after 4 attempts
}

// Do returns the value of the attempt that succeeded.
func ExampleDo() {
	attempts := 0
	price, err := retry.Do(context.Background(), retry.Policy{NoDelay: true}, func(ctx context.Context) (float64, error) {
		attempts++
		if attempts == 1 {
			return 0, errors.New("timeout")
		}
		return 9.99, nil
	})
	fmt.Println(price, err, attempts)
	// Output: 9.99 <nil> 2
}

// Permanent stops the retries at once: a not-found will not be found by
// asking again. The error still matches the original.
func ExamplePermanent() {
	errNotFound := errors.New("not found")
	attempts := 0
	err := retry.Policy{NoDelay: true}.Execute(context.Background(), func(ctx context.Context) error {
		attempts++
		return retry.Permanent(fmt.Errorf("user 42: %w", errNotFound))
	})
	fmt.Println(errors.Is(err, errNotFound), attempts)
	fmt.Println(err)
	// Output:
	// true 1
	// retry: 1 attempt (not retryable): user 42: not found
}

// An *Error tells how many attempts were made and why they stopped.
func ExampleError() {
	p := retry.Policy{MaxAttempts: 3, NoDelay: true}
	err := p.Execute(context.Background(), func(ctx context.Context) error {
		return errors.New("503 service unavailable")
	})
	var rerr *retry.Error
	if errors.As(err, &rerr) {
		fmt.Println(rerr.Attempts, rerr.Reason, rerr.Last)
	}
	// Output: 3 max attempts reached 503 service unavailable
}

// A Budget shared by every caller of a dependency keeps retries to a share
// of the calls: here, when it is down, 10 calls make 10 first attempts and
// 0.2 × 10 = 2 retries between them, instead of 20. Every call ends on a
// retry the budget refused.
func ExampleNewBudget() {
	budget := retry.NewBudget(0.2, 0)
	p := retry.Policy{MaxAttempts: 3, NoDelay: true, Budget: budget}
	attempts, spent := 0, 0
	for range 10 {
		err := p.Execute(context.Background(), func(ctx context.Context) error {
			attempts++
			return errors.New("down")
		})
		var rerr *retry.Error
		if errors.As(err, &rerr) && rerr.Reason == retry.BudgetSpent {
			spent++
		}
	}
	fmt.Println("attempts:", attempts, "calls refused a retry:", spent)
	// Output: attempts: 12 calls refused a retry: 10
}

// Transport retries an http.Client's requests. Here a stand-in for the
// network answers 503 with Retry-After: 0 twice, then 200.
func ExampleTransport() {
	n := 0
	flaky := roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		n++
		if n < 3 {
			return &http.Response{
				StatusCode: 503, Status: "503 Service Unavailable",
				Header: http.Header{"Retry-After": {"0"}},
				Body:   io.NopCloser(strings.NewReader("busy")),
			}, nil
		}
		return &http.Response{StatusCode: 200, Status: "200 OK", Body: io.NopCloser(strings.NewReader("hello"))}, nil
	})
	client := &http.Client{Transport: &retry.Transport{
		Base: flaky,
		Policy: retry.Policy{
			MaxAttempts: 4,
			NoDelay:     true,
			OnRetry: func(attempt int, err error, delay time.Duration) {
				fmt.Printf("attempt %d: %v\n", attempt, err)
			},
		},
	}}
	resp, err := client.Get("http://api.example/items")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output:
	// attempt 1: ctxsync: response status 503 Service Unavailable
	// attempt 2: ctxsync: response status 503 Service Unavailable
	// 200 OK hello
}
