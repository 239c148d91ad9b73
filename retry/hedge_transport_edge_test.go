package retry_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/retry"
)

// A Base that panics in a copy: the panic reaches the caller of RoundTrip,
// and the first attempt's ctx is cancelled.
func TestTransportHedgeCopyPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		var firstCancelled atomic.Bool
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if n.Add(1) == 2 {
				panic("base boom")
			}
			<-req.Context().Done()
			firstCancelled.Store(true)
			return nil, req.Context().Err()
		})
		tr := &retry.Transport{Base: base, Hedge: &retry.Hedge{Delay: time.Millisecond, Budget: plenty()}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://x/", nil)
		require.PanicsWithValue(t, "base boom", func() { _, _ = tr.RoundTrip(req) })
		require.True(t, firstCancelled.Load())
	})
}

// RetryResponse panics: the panic reaches the caller, and the response's
// body is closed.
func TestTransportRetryResponsePanics(t *testing.T) {
	body := &trackedBody{}
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 500, Body: body, Request: req}, nil
	})
	for _, h := range []*retry.Hedge{nil, {Delay: time.Hour, Budget: plenty()}} {
		body.closed.Store(false)
		tr := &retry.Transport{Base: base, Hedge: h, RetryResponse: func(*http.Response) bool { panic("pred boom") }}
		req, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
		require.PanicsWithValue(t, "pred boom", func() { _, _ = tr.RoundTrip(req) })
		require.True(t, body.closed.Load(), "hedge %v: the body is closed", h != nil)
	}
}

// The caller's ctx ends while the first attempt and a copy are in flight:
// RoundTrip returns the ctx's error, and every response that comes is
// closed.
func TestTransportHedgeCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{delays: []time.Duration{time.Hour, time.Hour}}
		tr := &retry.Transport{Base: base, Hedge: &retry.Hedge{Delay: time.Millisecond, Budget: plenty()}}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://x/", nil)
		resp, err := tr.RoundTrip(req)
		require.Nil(t, resp)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		synctest.Wait()
		require.Equal(t, 2, base.n)
	})
}

// A copy's response comes at the very instant the caller's ctx ends: it is
// returned, or its body is closed; none is left open.
func TestTransportHedgeWinnerAsCtxEnds(t *testing.T) {
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			base := &slowBase{delays: []time.Duration{time.Hour, 4 * time.Millisecond}}
			tr := &retry.Transport{Base: base, Policy: retry.Policy{MaxAttempts: 1}, Hedge: &retry.Hedge{Delay: time.Millisecond, Budget: plenty()}}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://x/", nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				require.NoError(t, resp.Body.Close())
			}
			synctest.Wait()
			base.mu.Lock()
			defer base.mu.Unlock()
			for i, b := range base.bodies {
				require.True(t, b.closed.Load(), "body %d left open", i)
			}
		})
	}
}

// A Transport with a Hedge made outside a bubble hedges inside one.
func TestTransportHedgeAcrossBubbles(t *testing.T) {
	h := &retry.Hedge{Budget: plenty()} // Delay 0: the estimate lives in the Budget
	ok := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
	})
	tr := &retry.Transport{Base: ok, Hedge: h}
	req, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	synctest.Test(t, func(t *testing.T) {
		base := &slowBase{delays: []time.Duration{time.Hour, time.Millisecond}}
		tr := &retry.Transport{Base: base, Hedge: h}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://x/", nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
	})
}
