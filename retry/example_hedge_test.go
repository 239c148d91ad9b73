package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/retry"
)

// DoHedged sends a copy of a call that is slow to answer, and takes the
// first answer. Here the first replica never answers: the copy, sent after
// Delay, does, and the first attempt's ctx is cancelled. With Delay 0, the
// delay would follow the 95th percentile of the replicas' latency.
func ExampleDoHedged() {
	h := retry.Hedge{
		Delay:  time.Millisecond,
		Budget: retry.NewBudget(0.1, 1), // hedges add at most 10% to the calls
	}
	var n atomic.Int32
	v, err := retry.DoHedged(context.Background(), h, func(ctx context.Context) (string, error) {
		if n.Add(1) == 1 {
			<-ctx.Done() // a replica that hangs, until the copy wins
			fmt.Println("first attempt:", ctx.Err())
			return "", ctx.Err()
		}
		return "answer from the copy", nil
	})
	fmt.Println(v, err)
	// Output:
	// first attempt: context canceled
	// answer from the copy <nil>
}

// replicas is an http.RoundTripper whose first request hangs until it is
// cancelled and whose others answer at once.
type replicas struct{ n atomic.Int32 }

func (r *replicas) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.n.Add(1) == 1 {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Body: io.NopCloser(strings.NewReader("hello")), Request: req}, nil
}

// Transport hedges the requests that are safe to send twice. The loser's
// ctx is cancelled; its response, had it come, would be drained and closed.
func ExampleTransport_hedge() {
	client := &http.Client{Transport: &retry.Transport{
		Base:  &replicas{},
		Hedge: &retry.Hedge{Delay: time.Millisecond, Budget: retry.NewBudget(0.1, 1)},
	}}
	resp, err := client.Get("http://replicas.example/")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output: 200 OK hello
}

// DoIf retries on a result: here a job that is not done yet.
func ExampleDoIf() {
	p := retry.Policy{MaxAttempts: 5, NoDelay: true}
	polls := 0
	state, err := retry.DoIf(context.Background(), p,
		func(state string, err error) bool { return err == nil && state == "running" },
		func(ctx context.Context) (string, error) {
			polls++
			if polls < 3 {
				return "running", nil
			}
			return "done", nil
		})
	fmt.Println(state, err, "after", polls, "polls")
	// Output: done <nil> after 3 polls
}

// DelayFunc gives the waits of a schedule that backoff cannot express.
func ExamplePolicy_delayFunc() {
	schedule := []time.Duration{0, 0, 0} // a fixed list; real ones are longer
	p := retry.Policy{
		MaxAttempts: 4,
		DelayFunc: func(attempt int, err error) time.Duration {
			return schedule[attempt-1]
		},
		OnRetry: func(attempt int, err error, d time.Duration) {
			fmt.Printf("attempt %d: %v; next in %v\n", attempt, err, d)
		},
	}
	err := p.Execute(context.Background(), func(context.Context) error { return errors.New("busy") })
	fmt.Println(err)
	// Output:
	// attempt 1: busy; next in 0s
	// attempt 2: busy; next in 0s
	// attempt 3: busy; next in 0s
	// retry: 4 attempts (max attempts reached): busy
}

// A Transport can decide from the response: retry a 500 from a service
// known to be idempotent, and not a 503 that says it is down for
// maintenance.
func ExampleTransport_retryResponse() {
	statuses := []int{500, 503}
	var n atomic.Int32
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		code := statuses[n.Add(1)-1]
		h := http.Header{}
		if code == 503 {
			h.Set("X-Maintenance", "until 14:00")
		}
		return &http.Response{StatusCode: code, Header: h, Body: http.NoBody, Request: req}, nil
	})
	tr := &retry.Transport{
		Base:   base,
		Policy: retry.Policy{NoDelay: true},
		RetryResponse: func(resp *http.Response) bool {
			return resp.StatusCode == 500 || resp.StatusCode == 503 && resp.Header.Get("X-Maintenance") == ""
		},
	}
	req, _ := http.NewRequest(http.MethodGet, "http://service.example/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("X-Maintenance"), "after", n.Load(), "attempts")
	// Output: 503 until 14:00 after 2 attempts
}

// roundTripFunc makes a function an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
