package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// Regression: Middleware asks a limiter that has TakeContext with the
// request's ctx (redislimit's Limiter, Global of its Handle, a Tally's
// wrapper of one), so that a decision that costs a round trip to Redis ends
// with the request. A Keyed whose limiters are such Handles, each in a
// Tally's wrapper (the way to count a redislimit's decisions per key in a
// Tally, which wraps one-key limiters only), was asked with Take: the
// Handle's Take, which waits for Redis with no ctx but its Timeout, for a
// client that had gone, and then ran the handler for nobody. Right: a
// Keyed's key limiter with TakeContext is asked with the request's ctx too,
// and a request that ends before its decision gets no handler, nothing
// written and nothing counted.
func TestMiddlewareKeyedOfContextTakers(t *testing.T) {
	type ctxKey struct{}
	for _, tallied := range []bool{false, true} {
		tally := new(ratelimit.Tally)
		var made []*oneCtxTaker
		keyed := ratelimit.NewKeyed(func(string) ratelimit.Taker {
			lim := &oneCtxTaker{t: t, err: context.Canceled}
			made = append(made, lim)
			if tallied {
				return tally.Wrap(lim)
			}
			return lim
		}, ratelimit.KeyedConfig{})
		handled := false
		mw := ratelimit.Middleware(keyed, ratelimit.MiddlewareConfig{})(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled = true }))
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "the request's"))
		cancel()
		w := &codeWriter{ResponseRecorder: httptest.NewRecorder()}
		mw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		if len(made) != 1 {
			t.Fatalf("tallied %v: %d limiters made, want 1", tallied, len(made))
		}
		if lim := made[0]; lim.ctx == nil || lim.ctx.Value(ctxKey{}) != "the request's" {
			t.Fatalf("tallied %v: the key's TakeContext was not given the request's ctx", tallied)
		}
		if handled || w.Code != 0 || w.Body.Len() != 0 {
			t.Fatalf("tallied %v: handled %v, code %d, body %q; want nothing", tallied, handled, w.Code, w.Body.String())
		}
		if c := tally.Counts(); c != (ratelimit.TallyCounts{}) {
			t.Fatalf("tallied %v: counts %+v for a request with no decision", tallied, c)
		}
	}
}

// A Keyed whose limiters have no TakeContext is asked by Middleware as
// before: its Take, whatever the request's ctx, counted once by a Tally.
func TestMiddlewareKeyedWithoutContextTakers(t *testing.T) {
	tally := new(ratelimit.Tally)
	keyed := ratelimit.NewKeyed(func(string) ratelimit.Taker {
		return tally.Wrap(ratelimit.NewTokenBucket(1, 1))
	}, ratelimit.KeyedConfig{})
	handled := 0
	mw := ratelimit.Middleware(keyed, ratelimit.MiddlewareConfig{})(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled++ }))
	for range 2 {
		mw.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	if c := tally.Counts(); handled != 1 || c.Allowed != 1 || c.Refused != 1 {
		t.Fatalf("handled %d, counts %+v; want 1 handled, 1 allowed, 1 refused", handled, c)
	}
}
