package ratelimit_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// edge16Rates are rates at the edges of what NewTokenBucket takes: about the
// slowest a bucket of burst 1 allows, 1, the fastest kept exactly, and +Inf.
var edge16Rates = []float64{1e-8, 1, 1e9, math.Inf(1)}

// TestEdge16ZeroEvents: a count of events below 1 (0, -1, math.MinInt) is a
// bug at every rate, +Inf included, and for every limiter of the package and
// every method that takes a count: it panics, naming the method, and takes
// nothing, even with a ctx already done (WaitN). A rate of 0 is refused
// too. Transport and Middleware ask no limiter for 0 events: a request that
// costs 0 goes through at once, takes nothing, and counts in no Tally; a
// negative cost panics.
func TestEdge16ZeroEvents(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, rate := range edge16Rates {
		for _, n := range []int{0, -1, math.MinInt} {
			tb := ratelimit.NewTokenBucket(rate, 1)
			tally := new(ratelimit.Tally)
			limiters := map[string]ratelimit.Taker{
				"TokenBucket":          tb,
				"Combined":             ratelimit.All(tb),
				"SlidingWindow":        ratelimit.NewSlidingWindow(1, time.Second),
				"SlidingWindowCounter": ratelimit.NewSlidingWindowCounter(1, time.Second),
				"Keyed":                ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket { return tb }, ratelimit.KeyedConfig{}).Limiter("k").(ratelimit.Taker),
			}
			for name, l := range limiters {
				msg := func(method string) string {
					return fmt.Sprintf("ratelimit: %s.%s with n = %d; n must be at least 1", name, method, n)
				}
				what := fmt.Sprintf("%s at rate %v, n = %d", name, rate, n)
				require.PanicsWithValue(t, msg("AllowN"), func() { l.AllowN(n) }, what)
				require.PanicsWithValue(t, msg("Take"), func() { l.Take(n) }, what)
				require.PanicsWithValue(t, msg("WaitN"), func() { _ = l.WaitN(context.Background(), n) }, what)
				require.PanicsWithValue(t, msg("WaitN"), func() { _ = l.WaitN(done, n) }, what)
				// Counted by a Tally as the limiter it wraps: the panic is
				// the limiter's, and nothing is counted.
				w := tally.Wrap(l)
				require.PanicsWithValue(t, msg("AllowN"), func() { w.AllowN(n) }, what)
				require.PanicsWithValue(t, msg("WaitN"), func() { _ = w.WaitN(context.Background(), n) }, what)
			}
			require.PanicsWithValue(t, fmt.Sprintf("ratelimit: TokenBucket.AllowNAt with n = %d; n must be at least 1", n), func() { tb.AllowNAt(n, time.Now()) })
			require.Equal(t, ratelimit.TallyCounts{}, tally.Counts())
			require.Equal(t, 1.0, tb.Tokens(), "nothing taken at rate %v", rate)
			require.True(t, tb.Allow(), "rate %v", rate)
		}
	}
	for _, rate := range []float64{0, math.Copysign(0, -1), -1, math.NaN(), math.Inf(-1)} {
		require.Panics(t, func() { ratelimit.NewTokenBucket(rate, 1) }, "%v", rate)
		require.Error(t, ratelimit.ValidateTokenBucket(rate, 1), "%v", rate)
		tb := ratelimit.NewTokenBucket(1, 1)
		require.Panics(t, func() { tb.SetRate(rate) }, "%v", rate)
		require.Equal(t, 1.0, tb.Rate())
	}
}

// edge16OK answers 200.
type edge16OK struct{ sent int }

func (b *edge16OK) RoundTrip(req *http.Request) (*http.Response, error) {
	b.sent++
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// TestEdge16FreeRequests: at every rate, a request that costs 0 goes
// through Transport and Middleware without a limiter asked: nothing is
// taken, even from an empty bucket, and the Tally counts nothing. A request
// whose ctx is done fails with ctx.Err() all the same (Transport). A cost
// of -1 panics.
func TestEdge16FreeRequests(t *testing.T) {
	for _, rate := range edge16Rates {
		tb := ratelimit.NewTokenBucket(rate, 1)
		require.True(t, tb.Allow()) // empty, but at +Inf
		tally := new(ratelimit.Tally)
		base := &edge16OK{}
		cost := 0
		tr := &ratelimit.Transport{Base: base, Limiter: tally.Wrap(tb), Cost: func(*http.Request) int { return cost }}
		for range 3 {
			req := httptest.NewRequest(http.MethodGet, "http://h.example/", nil)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err, "rate %v", rate)
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
		require.Equal(t, 3, base.sent)
		req := httptest.NewRequest(http.MethodGet, "http://h.example/", nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := tr.RoundTrip(req.WithContext(ctx))
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 3, base.sent)
		cost = -1
		require.PanicsWithValue(t, "ratelimit: Transport's Cost returned -1; it must be at least 0", func() { _, _ = tr.RoundTrip(req) })

		mcost := 0
		h := ratelimit.Middleware(ratelimit.NewKeyed(func(string) ratelimit.Taker { return tally.Wrap(tb) }, ratelimit.KeyedConfig{}),
			ratelimit.MiddlewareConfig{Cost: func(*http.Request) int { return mcost }})(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}))
		for range 3 {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			require.Equal(t, http.StatusNoContent, rec.Code, "rate %v", rate)
			require.Empty(t, rec.Header().Get("RateLimit"), "a free request gets no rate-limit headers")
		}
		mcost = -1
		require.PanicsWithValue(t, "ratelimit: Middleware's Cost returned -1; it must be at least 0", func() {
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		})
		require.Equal(t, ratelimit.TallyCounts{}, tally.Counts(), "rate %v", rate)
		switch {
		case math.IsInf(rate, 1):
			require.Equal(t, 1.0, tb.Tokens())
		case rate <= 1: // at 1e9 a second, refilled at once
			require.Less(t, tb.Tokens(), 1.0, "rate %v: the bucket stays as the Allow left it", rate)
		}
	}
}
