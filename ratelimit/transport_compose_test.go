package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// scriptServer answers its requests with the statuses of a script, in turn,
// then 200; a status given as "429 2" sends Retry-After: 2.
type scriptServer struct {
	mu     sync.Mutex
	script []string
	n      int
}

func (s *scriptServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	step := "200"
	if s.n < len(s.script) {
		step = s.script[s.n]
	}
	s.n++
	s.mu.Unlock()
	var code int
	var after string
	_, _ = fmt.Sscan(step, &code, &after)
	if after != "" {
		w.Header().Set("Retry-After", after)
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, step)
}

func (s *scriptServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// wire is the innermost RoundTripper: it records, on the bubble's clock,
// when each request went out and what came back.
type wire struct {
	base  http.RoundTripper
	start time.Time
	mu    sync.Mutex
	log   []string
}

func (w *wire) RoundTrip(r *http.Request) (*http.Response, error) {
	at := time.Since(w.start)
	resp, err := w.base.RoundTrip(r)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.log = append(w.log, fmt.Sprintf("%v error", at))
	} else {
		w.log = append(w.log, fmt.Sprintf("%v %d", at, resp.StatusCode))
	}
	return resp, err
}

func (w *wire) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.log...)
}

// countingBucket is a TokenBucket that counts the events it gives out.
type countingBucket struct {
	*ratelimit.TokenBucket
	taken atomic.Int32
}

func (c *countingBucket) AllowN(n int) bool {
	ok := c.TokenBucket.AllowN(n)
	if ok {
		c.taken.Add(int32(n))
	}
	return ok
}

func (c *countingBucket) WaitN(ctx context.Context, n int) error {
	err := c.TokenBucket.WaitN(ctx, n)
	if err == nil {
		c.taken.Add(int32(n))
	}
	return err
}

// TestTransportsComposed runs one http.Client with retry.Transport outermost,
// then ratelimit.Transport, then breaker.Transport against a server that
// fails, then throttles with 429 and Retry-After, then recovers: the retries
// honour the breaker's open time and the server's Retry-After; a request the
// breaker refuses takes no event of the limit and is not sent; the limiter
// spaces the requests that are.
//
// The server runs outside the synctest bubble (a bubble's clock cannot wait
// for goroutines blocked on the network), and the client keeps no idle
// connection, whose reader would block on the network between requests.
func TestTransportsComposed(t *testing.T) {
	srv := &scriptServer{script: []string{"503", "503", "503", "429 1"}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	host := strings.TrimPrefix(ts.URL, "http://")

	synctest.Test(t, func(t *testing.T) {
		conns := &http.Transport{DisableKeepAlives: true}
		defer conns.CloseIdleConnections()
		w := &wire{base: conns, start: time.Now()}
		var buckets sync.Map
		perHost := ratelimit.NewKeyed(func(h string) *countingBucket {
			c := &countingBucket{TokenBucket: ratelimit.NewTokenBucket(10, 1)}
			buckets.Store(h, c)
			return c
		}, ratelimit.KeyedConfig{})
		var changes []string
		cb := &breaker.Transport{
			Base:     w,
			Settings: breaker.Settings{FailureThreshold: 3, OpenTimeout: 2 * time.Second},
			OnStateChange: func(host string, from, to breaker.State, _ breaker.Counts) {
				changes = append(changes, fmt.Sprintf("%v %v>%v", time.Since(w.start), from, to))
			},
		}
		var retries []string
		client := &http.Client{Transport: &retry.Transport{
			Base: &ratelimit.Transport{Base: cb, PerHost: perHost},
			Policy: retry.Policy{
				MaxAttempts:  10,
				InitialDelay: 50 * time.Millisecond,
				Multiplier:   1,
				Jitter:       retry.NoJitter,
				OnRetry: func(n int, err error, d time.Duration) {
					kind := "status"
					if errors.Is(err, breaker.ErrOpen) {
						kind = "open"
					}
					retries = append(retries, fmt.Sprintf("%d %s %v", n, kind, d))
				},
			},
		}}

		resp, err := client.Get(ts.URL + "/report")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, "200", string(body))

		require.Equal(t, []string{
			"0s 503",    // attempt 1
			"100ms 503", // attempt 2: retried after 50ms, then the limiter's 100ms spacing
			"200ms 503", // attempt 3: the third failure opens the breaker
			"2.2s 429",  // attempt 5, after the open time: the trial; a 429 is no failure
			"3.2s 200",  // attempt 6, after the server's Retry-After
		}, w.lines())
		require.Equal(t, []string{
			"1 status 50ms",
			"2 status 50ms",
			"3 status 50ms",
			"4 open 1.95s", // refused at 250ms: the rest of the open time
			"5 status 1s",  // Retry-After: 1
		}, retries)
		require.Equal(t, []string{"200ms closed>open", "2.2s open>half-open", "2.2s half-open>closed"}, changes)
		require.Equal(t, 5, srv.requests(), "the refused attempt was sent")
		c, _ := buckets.Load(host)
		require.EqualValues(t, 5, c.(*countingBucket).taken.Load(), "the refused attempt took an event")
		require.EqualValues(t, 1, cb.Breaker(host).Metrics().Total.Rejected)
	})
}

// TestTransportsComposedDeadline: a caller's deadline that the limiter's wait
// would pass ends the request at once, retry.Transport seeing through the
// DeadlineError's RetryAfter that no attempt could come in time; with an
// AttemptTimeout shorter than the wait but a deadline beyond it,
// retry.Transport waits as the DeadlineError says, then succeeds.
func TestTransportsComposedDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent atomic.Int32
		base := roundTripper(func(r *http.Request) (*http.Response, error) {
			sent.Add(1)
			return &http.Response{StatusCode: 200, Status: "200 OK", Body: http.NoBody, Request: r}, nil
		})
		bucket := ratelimit.NewTokenBucket(1, 1)
		var delays []time.Duration
		tr := &retry.Transport{
			Base: &ratelimit.Transport{Base: &breaker.Transport{Base: base}, Limiter: bucket},
			Policy: retry.Policy{
				Jitter:         retry.NoJitter,
				AttemptTimeout: 100 * time.Millisecond,
				OnRetry:        func(_ int, _ error, d time.Duration) { delays = append(delays, d) },
			},
		}
		get := func(timeout time.Duration) error {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://a.test/", nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			return err
		}
		require.NoError(t, get(time.Minute)) // takes the one token

		start := time.Now()
		err := get(500 * time.Millisecond)
		require.Zero(t, time.Since(start), "the request waited for a token it could not get in time")
		var rerr *retry.Error
		require.ErrorAs(t, err, &rerr)
		require.Equal(t, retry.DeadlineReached, rerr.Reason)
		var de *ratelimit.DeadlineError
		require.ErrorAs(t, err, &de)
		require.Equal(t, time.Second, de.RetryAfter())
		require.ErrorIs(t, err, ratelimit.ErrWouldExceedDeadline)

		start = time.Now()
		require.NoError(t, get(5*time.Second))
		require.Equal(t, time.Second, time.Since(start))
		require.Equal(t, []time.Duration{time.Second}, delays)
		require.EqualValues(t, 2, sent.Load())
	})
}

// TestTransportsComposedHalfOpenWait: while a request waits for the limiter,
// the half-open breaker behind keeps its trial slot free.
func TestTransportsComposedHalfOpenWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fail := true
		base := roundTripper(func(r *http.Request) (*http.Response, error) {
			code := 200
			if fail {
				code = 503
			}
			return &http.Response{StatusCode: code, Body: http.NoBody, Request: r}, nil
		})
		cb := &breaker.Transport{Base: base, Settings: breaker.Settings{FailureThreshold: 1, OpenTimeout: time.Second}}
		bucket := ratelimit.NewTokenBucket(0.25, 1) // a token every 4s
		tr := &ratelimit.Transport{Base: cb, Limiter: bucket}
		get := func() (*http.Response, error) {
			req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
			return tr.RoundTrip(req)
		}
		resp, err := get()
		require.NoError(t, err)
		require.Equal(t, 503, resp.StatusCode)
		b := cb.Breaker("a.test")
		require.Equal(t, breaker.Open, b.State())

		time.Sleep(time.Second)
		require.Equal(t, breaker.HalfOpen, b.State())
		fail = false
		done := make(chan error)
		go func() {
			_, err := get() // waits 3s more for a token
			done <- err
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		// The waiting request holds no trial slot: a call gets it.
		trial, err := b.Allow(context.Background())
		require.NoError(t, err, "the trial slot is held by a request waiting for the limiter")
		trial(nil)
		require.Equal(t, breaker.Closed, b.State())
		require.NoError(t, <-done)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
