// Command retry shows two ways to retry with package retry.
//
// First, an HTTP fetch through retry.Transport: the server is overloaded
// for a while and answers 503 with Retry-After, then recovers; the client
// waits as the server asks, and its caller sees only the final 200.
//
// Second, a retry "decorator": withRetry wraps any function of a ctx and
// an argument into one that retries it. A lookup that fails for a while
// succeeds on a later attempt; a lookup of a missing key fails for good at
// once (retry.Permanent); and one whose caller's deadline is too close for
// the next wait gives up at once instead of sleeping only to fail.
//
// Every wait is printed with the attempt that failed and its error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/ctxsync/ctxsync/retry"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(w, "[%5dms] %s\n", time.Since(start).Milliseconds(), fmt.Sprintf(format, args...))
	}
	fetch(logf)
	fmt.Fprintln(w)
	decorate(logf)
}

// fetch gets a report from a server that is overloaded for its first three
// requests.
func fetch(logf func(string, ...any)) {
	requests := 0
	server := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		if requests <= 3 {
			w.Header().Set("Retry-After", "1") // seconds
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "report: 42 widgets")
	})
	client := &http.Client{Transport: &retry.Transport{
		Base: inProcess{server},
		Policy: retry.Policy{
			MaxAttempts:  5,
			InitialDelay: 200 * time.Millisecond,
			Jitter:       retry.NoJitter, // exact waits, for the example's output
			OnRetry: func(attempt int, err error, delay time.Duration) {
				logf("  attempt %d: %v; next attempt in %v", attempt, err, delay)
			},
		},
	}}
	logf("GET /report")
	resp, err := client.Get("http://reports.example/report")
	if err != nil {
		logf("GET /report failed: %v", err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	logf("GET /report: %s %q", resp.Status, body)
}

// withRetry is a retry decorator: it returns f made to retry as p says.
func withRetry[A, R any](p retry.Policy, f func(context.Context, A) (R, error)) func(context.Context, A) (R, error) {
	return func(ctx context.Context, arg A) (R, error) {
		return retry.Do(ctx, p, func(ctx context.Context) (R, error) { return f(ctx, arg) })
	}
}

var errNotFound = errors.New("not found")

// decorate retries a flaky price lookup through withRetry.
func decorate(logf func(string, ...any)) {
	calls := map[string]int{}
	lookup := func(ctx context.Context, item string) (float64, error) {
		calls[item]++
		switch {
		case item == "gizmo":
			// Not worth asking again: Permanent ends the retries.
			return 0, retry.Permanent(fmt.Errorf("price of %s: %w", item, errNotFound))
		case calls[item] <= 2:
			return 0, fmt.Errorf("price of %s: connection reset", item)
		}
		return 9.5, nil
	}
	price := withRetry(retry.Policy{
		MaxAttempts:  4,
		InitialDelay: 100 * time.Millisecond,
		Multiplier:   3,
		Jitter:       retry.NoJitter,
		OnRetry: func(attempt int, err error, delay time.Duration) {
			logf("  attempt %d: %v; next attempt in %v", attempt, err, delay)
		},
	}, lookup)

	for _, c := range []struct {
		item    string
		timeout time.Duration
	}{{"widget", time.Second}, {"gizmo", time.Second}, {"sprocket", 200 * time.Millisecond}} {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		logf("price(%s), within %v", c.item, c.timeout)
		p, err := price(ctx, c.item)
		cancel()
		var rerr *retry.Error
		switch {
		case errors.As(err, &rerr):
			logf("price(%s) gave up after attempt %d (%v): %v", c.item, rerr.Attempts, rerr.Reason, rerr.Last)
		case err != nil:
			logf("price(%s) failed: %v", c.item, err)
		default:
			logf("price(%s) = %.2f", c.item, p)
		}
	}
}

// inProcess is an http.RoundTripper that serves requests with a handler in
// the same process, so the example needs no network.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return rec.Result(), nil
}
