package retry_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// review2Layer counts what passes one seam of the stack: the calls, those
// of malformed requests, the breaker refusals that come back through it, and
// (innermost) the bodies of the responses, which must all be closed.
type review2Layer struct {
	base      http.RoundTripper
	calls     atomic.Int64
	malformed atomic.Int64
	open      atomic.Int64 // *breaker.OpenError returned
	mu        sync.Mutex
	bodies    []*review2Body
	track     bool
}

type review2Body struct {
	io.ReadCloser
	closed atomic.Int32
}

func (b *review2Body) Close() error { b.closed.Add(1); return b.ReadCloser.Close() }

func (l *review2Layer) RoundTrip(r *http.Request) (*http.Response, error) {
	l.calls.Add(1)
	if r.Header.Get("X-Review") != "" && r.Header.Get("X-Review") != "ok" {
		l.malformed.Add(1)
	}
	resp, err := l.base.RoundTrip(r)
	if errors.Is(err, breaker.ErrOpen) {
		l.open.Add(1)
	}
	if l.track && resp != nil && resp.Body != nil {
		b := &review2Body{ReadCloser: resp.Body}
		resp.Body = b
		l.mu.Lock()
		l.bodies = append(l.bodies, b)
		l.mu.Unlock()
	}
	return resp, err
}

// Precheck passes on the breaker's, as ratelimit.Transport needs to see it.
func (l *review2Layer) Precheck(r *http.Request) error {
	if p, ok := l.base.(interface{ Precheck(*http.Request) error }); ok {
		return p.Precheck(r)
	}
	return nil
}

// TestReview2SeamsOfTheRecipe: the README's http-client recipe, retry over
// ratelimit over breaker, against a real server (on loopback, outside the
// bubble) that fails by the count of its requests (503 with Retry-After: 1,
// 429 with Retry-After: 0, a 502, a dropped connection, and runs of 503s
// and of dropped connections that open the breaker), with many
// concurrent requests, some malformed. Nothing is lost, counted twice or
// stalled: every request sent to the breaker took exactly one event of the
// limiter (one Tally wait), and every one that reached the wire counts once
// in the breaker's Total and once at the server; every refusal of the
// breaker (its Precheck's or its RoundTrip's) is one Rejected, none of them
// took an event; the malformed requests went to the wire once each, past
// both, counted nowhere; every response body is closed; no request ends
// with its ctx.
func TestReview2SeamsOfTheRecipe(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		switch {
		case n > 20 && n <= 25: // down a while: the breaker opens
			w.Header().Set("Retry-After", "1")
			http.Error(w, "down", http.StatusServiceUnavailable)
		case n%11 == 0 || (n > 60 && n <= 64):
			hj, ok := w.(http.Hijacker)
			if !ok {
				panic("review: no Hijacker")
			}
			c, _, err := hj.Hijack()
			if err == nil {
				_ = c.Close() // a dropped connection: a transport error
			}
		case n%5 == 0:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "down", http.StatusServiceUnavailable)
		case n%7 == 0:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case n%13 == 0:
			http.Error(w, "bad gateway", http.StatusBadGateway)
		default:
			_, _ = io.WriteString(w, "ok "+strconv.FormatInt(n, 10))
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	defer srv.Close()

	synctest.Test(t, func(t *testing.T) {
		conns := &http.Transport{DisableKeepAlives: true} // see examples/http-client's test
		defer conns.CloseIdleConnections()
		wire := &review2Layer{base: conns, track: true}
		br := &breaker.Transport{Base: wire, Settings: breaker.Settings{FailureThreshold: 3, OpenTimeout: 2 * time.Second}}
		inner := &review2Layer{base: br}
		var tally ratelimit.Tally
		rl := &ratelimit.Transport{Base: inner, Limiter: tally.Wrap(ratelimit.NewTokenBucket(20, 5))}
		mid := &review2Layer{base: rl}
		var retries atomic.Int64
		client := &http.Client{Transport: &retry.Transport{Base: mid, Policy: retry.Policy{
			MaxAttempts:  4,
			InitialDelay: 100 * time.Millisecond,
			MaxDelay:     time.Second,
			Budget:       retry.NewBudget(1, 20),
			OnRetry:      func(int, error, time.Duration) { retries.Add(1) },
		}}}

		const workers, each = 12, 6
		var wg sync.WaitGroup
		var malformed, ended atomic.Int64
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
					req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/"+strconv.Itoa(w*each+i), nil)
					if !assert.NoError(t, err) {
						cancel()
						return
					}
					bad := (w+i)%9 == 0
					if bad {
						malformed.Add(1)
						req.Header.Set("X-Review", "bad\nvalue")
					} else {
						req.Header.Set("X-Review", "ok")
					}
					start := time.Now()
					resp, err := client.Do(req)
					took := time.Since(start)
					cancel()
					ended.Add(1)
					// Four attempts, three waits of at most 10s (a breaker's
					// 2s, a Retry-After of 1s, the backoff's 1s, the limiter's):
					// far below the ctx's 5 minutes.
					assert.Less(t, took, time.Minute, "request %d/%d", w, i)
					if err != nil {
						var rerr *retry.Error
						if errors.As(err, &rerr) {
							assert.NotEqual(t, retry.ContextDone, rerr.Reason, "%v", err)
						}
						assert.NotErrorIs(t, err, context.DeadlineExceeded)
						if bad {
							assert.ErrorContains(t, err, "invalid header field value")
						}
						continue
					}
					assert.False(t, bad, "a malformed request got a response")
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		require.Positive(t, mid.open.Load(), "the breaker never refused: the test tests less than it says")
		require.Positive(t, mid.open.Load()-inner.open.Load(), "no Precheck refused: the test tests less than it says")

		require.EqualValues(t, workers*each, ended.Load())
		tc := tally.Counts()
		total := br.Breaker(httpHostKey(srv.URL)).Metrics().Total
		mal := malformed.Load()
		t.Logf("server %d, wire %d, breaker total %+v, tally %+v, retries %d, malformed %d",
			hits.Load(), wire.calls.Load(), total, tc, retries.Load(), mal)

		// Malformed: one attempt each, straight to the wire.
		require.Equal(t, mal, mid.malformed.Load(), "attempts of malformed requests")
		require.Equal(t, mal, inner.malformed.Load())
		require.Equal(t, mal, wire.malformed.Load())
		// The limiter: one Tally wait per request given to the breaker; a
		// request refused by the Precheck took nothing.
		require.Zero(t, tc.Allowed)
		require.Zero(t, tc.Refused)
		prechecked := mid.open.Load() - inner.open.Load()
		require.Equal(t, mid.calls.Load()-mid.malformed.Load(), tc.Waited+tc.WaitFailed+prechecked, "attempts at the limiter")
		require.Equal(t, tc.Waited, inner.calls.Load()-inner.malformed.Load(), "requests given to the breaker")
		// The breaker: every request it let through is on the wire once,
		// and at the server once; every refusal is one Rejected.
		wellOnWire := wire.calls.Load() - wire.malformed.Load()
		require.Equal(t, wellOnWire, total.Requests)
		require.Equal(t, total.Requests, total.Successes+total.Failures+total.Ignored)
		require.Equal(t, wellOnWire, hits.Load())
		require.Equal(t, mid.open.Load(), total.Rejected, "breaker refusals")
		// Every body closed, once.
		wire.mu.Lock()
		defer wire.mu.Unlock()
		for i, b := range wire.bodies {
			require.EqualValues(t, 1, b.closed.Load(), "body %d", i)
		}
	})
}

// httpHostKey is the breaker's key of a loopback server's URL: host:port.
func httpHostKey(url string) string {
	return url[len("http://"):]
}
