package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// inProcess is an http.RoundTripper that serves requests with a handler in
// the same process, so that the examples need no network.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return rec.Result(), nil
}

var hello = inProcess{http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello") })}

// A Transport keeps a client to each host's limit: here bursts of 2, then one
// request a minute. A request whose wait would pass its deadline fails at
// once, and says how long it would have waited.
func ExampleTransport() {
	perHost := ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket {
		return ratelimit.NewTokenBucket(1.0/60, 2)
	}, ratelimit.KeyedConfig{})
	client := &http.Client{Transport: &ratelimit.Transport{Base: hello, PerHost: perHost}}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, url := range []string{"http://a.example/1", "http://a.example/2", "http://b.example/1", "http://a.example/3"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		var de *ratelimit.DeadlineError
		if errors.As(err, &de) {
			fmt.Printf("GET %s: not before %v\n", url, de.RetryAfter().Round(time.Second))
			continue
		}
		resp.Body.Close()
		fmt.Printf("GET %s: %s\n", url, resp.Status)
	}
	// Output:
	// GET http://a.example/1: 200 OK
	// GET http://a.example/2: 200 OK
	// GET http://b.example/1: 200 OK
	// GET http://a.example/3: not before 1m0s
}

// The three transports in one client: retry.Transport outermost, then
// ratelimit.Transport, then breaker.Transport. A request that the breaker
// refuses takes nothing from the limit (ratelimit.Transport asks the breaker
// first, through its Precheck), and a half-open breaker's trial request
// holds its slot only once its wait for the limiter is over.
func ExampleTransport_withBreakerAndRetry() {
	down := inProcess{http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})}
	limit := ratelimit.NewTokenBucket(1.0/60, 5) // 5, then one a minute
	client := &http.Client{Transport: &retry.Transport{
		Base: &ratelimit.Transport{
			Base: &breaker.Transport{
				Base:     down,
				Settings: breaker.Settings{FailureThreshold: 2, OpenTimeout: 30 * time.Second},
			},
			Limiter: limit,
		},
		Policy: retry.Policy{MaxAttempts: 2, NoDelay: true},
	}}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 2 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/", nil)
		resp, err := client.Do(req)
		var rerr *retry.Error
		if errors.As(err, &rerr) {
			fmt.Printf("GET %d: refused, breaker open: %t; gave up after %d attempt: %v\n", i+1,
				errors.Is(err, breaker.ErrOpen), rerr.Attempts, rerr.Reason)
		} else {
			resp.Body.Close()
			fmt.Printf("GET %d: %s\n", i+1, resp.Status)
		}
		fmt.Printf("  tokens left: %v\n", math.Floor(limit.Tokens()))
	}
	// Output:
	// GET 1: 503 Service Unavailable
	//   tokens left: 3
	// GET 2: refused, breaker open: true; gave up after 1 attempt: next wait would pass the deadline
	//   tokens left: 3
}
