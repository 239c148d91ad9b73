// Command http-client puts three transports in one http.Client, and shows
// what each does against a flaky server on 127.0.0.1:
//
//	retry.Transport       sends a request again after a 503 or a 429, and
//	                      waits as long as Retry-After or the breaker says
//	ratelimit.Transport   keeps to two limits per host at once, as APIs
//	                      state them: 5 requests a second and 100 a minute
//	breaker.Transport     stops sending to a host after 3 failures in a row,
//	                      for 2 seconds, then lets one trial request through
//
// They nest in that order, retry outermost. The breaker sits inside the
// limiter so that a trial request, the only one a half-open breaker lets
// through, takes its trial slot only after its wait for the limiter; and the
// limiter asks the breaker first (ratelimit.Transport calls
// breaker.Transport's Precheck), so that a request the breaker refuses takes
// nothing from the limit.
//
// The server is down for its first three requests (503), then throttles the
// client once (429, Retry-After: 1), then serves. The first GET goes through
// all of it; three more GETs in a row are spaced by the limiter; a last GET,
// with a deadline too close for its turn, fails at once instead of waiting.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

func main() {
	srv := httptest.NewServer(flakyServer())
	defer srv.Close()
	run(os.Stdout, srv.URL, http.DefaultTransport)
}

// flakyServer returns a handler that fails, then throttles, then serves, by
// the count of its requests.
func flakyServer() http.Handler {
	var mu sync.Mutex
	requests := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests++
		n := requests
		mu.Unlock()
		switch {
		case n <= 3:
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		case n == 4:
			w.Header().Set("Retry-After", "1") // seconds
			http.Error(w, "slow down", http.StatusTooManyRequests)
		default:
			fmt.Fprintf(w, "report %d", n)
		}
	})
}

// run sends the GETs to the server at url; conns makes the connections.
func run(w io.Writer, url string, conns http.RoundTripper) {
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(w, "[%5dms] %s\n", time.Since(start).Milliseconds(), fmt.Sprintf(format, args...))
	}

	// Each host's limiter grants a request only when both limits can: All
	// takes from both or from neither.
	perHost := ratelimit.NewKeyed(func(string) *loggedLimits {
		return &loggedLimits{Combined: ratelimit.All(
			ratelimit.NewTokenBucket(5, 1),
			ratelimit.NewSlidingWindow(100, time.Minute),
		), logf: logf}
	}, ratelimit.KeyedConfig{})
	client := &http.Client{Transport: &retry.Transport{
		Base: &ratelimit.Transport{
			Base: &breaker.Transport{
				Base:     &wireLog{base: conns, logf: logf},
				Settings: breaker.Settings{FailureThreshold: 3, OpenTimeout: 2 * time.Second},
				OnStateChange: func(_ string, from, to breaker.State, _ breaker.Counts) {
					logf("    breaker: %v -> %v", from, to)
				},
			},
			PerHost: perHost,
		},
		Policy: retry.Policy{
			MaxAttempts:  6,
			InitialDelay: 100 * time.Millisecond,
			Multiplier:   1,              // a constant 100ms, unless the server or the breaker asks for more
			Jitter:       retry.NoJitter, // exact waits, for the example's output
			OnRetry: func(attempt int, err error, delay time.Duration) {
				logf("  retry: attempt %d %s; next in %v", attempt, why(err), delay.Round(time.Millisecond))
			},
		},
	}}
	defer client.CloseIdleConnections()

	get := func(path string, timeout time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
		logf("GET %s", path)
		resp, err := client.Do(req)
		if err != nil {
			var rerr *retry.Error
			if errors.As(err, &rerr) {
				logf("GET %s failed after %d attempt(s), %v: %s", path, rerr.Attempts, rerr.Reason, why(rerr.Last))
			} else {
				logf("GET %s failed: %v", path, err)
			}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		logf("GET %s: %s %q", path, resp.Status, body)
	}

	get("/report", time.Minute)
	fmt.Fprintln(w)
	for _, p := range []string{"/a", "/b", "/c"} {
		get(p, time.Minute)
	}
	fmt.Fprintln(w)
	get("/d", 100*time.Millisecond)
}

// why says what an attempt's error was, without the server's address.
func why(err error) string {
	var (
		status *retry.StatusError
		open   *breaker.OpenError
		limit  *ratelimit.DeadlineError
	)
	switch {
	case errors.As(err, &status):
		return "got " + status.Status
	case errors.As(err, &open):
		return fmt.Sprintf("refused by the %v breaker", open.State)
	case errors.As(err, &limit):
		return fmt.Sprintf("refused by the limiter: its turn is %v away", limit.RetryAfter().Round(time.Millisecond))
	}
	return err.Error()
}

// loggedLimits are a host's limits, which tell when a request waits for them.
type loggedLimits struct {
	*ratelimit.Combined
	logf func(string, ...any)
}

func (b *loggedLimits) WaitN(ctx context.Context, n int) error {
	start := time.Now()
	err := b.Combined.WaitN(ctx, n)
	// Waits shorter than a millisecond are the time the call takes.
	if d := time.Since(start).Round(time.Millisecond); d > 0 && err == nil {
		b.logf("    limiter: waited %v", d)
	}
	return err
}

// wireLog is the innermost RoundTripper: it tells what went out on the wire,
// and what came back.
type wireLog struct {
	base http.RoundTripper
	logf func(string, ...any)
}

func (t *wireLog) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		t.logf("    server: %s %s: %v", req.Method, req.URL.Path, err)
		return nil, err
	}
	t.logf("    server: %s %s: %s", req.Method, req.URL.Path, resp.Status)
	return resp, nil
}
