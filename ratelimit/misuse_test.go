package ratelimit

// The tests of this file pin what misuse does: zero values, nil limiters,
// user functions that misbehave, and the headers a policy states.

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestZeroValues: every limiter's zero value panics at first use, saying to
// use its constructor, rather than dereferencing nil or dividing by zero.
func TestZeroValues(t *testing.T) {
	ctx := t.Context()
	for name, uses := range map[string][]func(){
		"ratelimit: use NewTokenBucket; the zero TokenBucket is not usable": func() []func() {
			b := new(TokenBucket)
			return []func(){
				func() { b.Allow() }, func() { b.AllowN(1) }, func() { b.AllowNAt(1, time.Now()) },
				func() { b.Take(1) }, func() { _ = b.Wait(ctx) }, func() { _ = b.WaitN(ctx, 1) },
				func() { _ = b.Wait(canceled()) }, func() { b.Tokens() }, func() { b.Rate() },
				func() { b.Burst() }, func() { b.SetRate(1) }, func() { b.SetBurst(1) },
			}
		}(),
		"ratelimit: use NewSlidingWindow; the zero SlidingWindow is not usable": func() []func() {
			s := new(SlidingWindow)
			return []func(){
				func() { s.Allow() }, func() { s.AllowN(1) }, func() { s.Take(1) },
				func() { _ = s.Wait(ctx) }, func() { _ = s.WaitN(canceled(), 1) },
			}
		}(),
		"ratelimit: use NewSlidingWindowCounter; the zero SlidingWindowCounter is not usable": func() []func() {
			c := new(SlidingWindowCounter)
			return []func(){
				func() { c.Allow() }, func() { c.AllowN(1) }, func() { c.Take(1) },
				func() { _ = c.Wait(ctx) }, func() { _ = c.WaitN(canceled(), 1) },
			}
		}(),
		"ratelimit: use NewKeyed; the zero Keyed is not usable": func() []func() {
			k := new(Keyed[string, *TokenBucket])
			return []func(){
				func() { k.Allow("a") }, func() { k.AllowN("a", 1) }, func() { k.Take("a", 1) },
				func() { k.Get("a") }, func() { _ = k.WaitN(ctx, "a", 1) },
				func() { _ = k.WaitN(canceled(), "a", 1) }, func() { k.Limiter("a").AllowN(1) },
				func() { k.Len() },
			}
		}(),
	} {
		for i, use := range uses {
			require.PanicsWithValue(t, name, use, "use %d", i)
		}
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestNilLimiterAtConstruction: a nil limiter given to Global or Middleware
// is refused when they are called, not at the first request.
func TestNilLimiterAtConstruction(t *testing.T) {
	require.PanicsWithValue(t, "ratelimit: Global with nil Taker", func() { Global(nil) })
	require.PanicsWithValue(t, "ratelimit: Global with nil Taker", func() { Global((*TokenBucket)(nil)) })
	require.PanicsWithValue(t, "ratelimit: Middleware with nil limiter", func() {
		Middleware((*Keyed[string, *TokenBucket])(nil), MiddlewareConfig{})
	})
	require.PanicsWithValue(t, "ratelimit: Middleware with nil limiter", func() { Middleware(nil, MiddlewareConfig{}) })
	require.PanicsWithValue(t, "ratelimit: NewKeyed with nil newLimiter", func() {
		NewKeyed[string, *TokenBucket](nil, KeyedConfig{})
	})
}

// TestKeyedNewLimiterMisbehaves: a newLimiter that returns nil is reported
// as such; one that panics leaves the Keyed whole, and the panic reaches the
// caller.
func TestKeyedNewLimiterMisbehaves(t *testing.T) {
	k := NewKeyed(func(string) *TokenBucket { return nil }, KeyedConfig{})
	require.PanicsWithValue(t, `ratelimit: NewKeyed's newLimiter returned nil for key "a"`, func() { k.Allow("a") })
	require.Zero(t, k.Len())

	fail := true
	k = NewKeyed(func(string) *TokenBucket {
		if fail {
			panic("newLimiter failed")
		}
		return NewTokenBucket(1, 1)
	}, KeyedConfig{MaxKeys: 1})
	for _, use := range []func(){
		func() { k.Allow("a") }, func() { k.Take("a", 1) }, func() { _ = k.WaitN(t.Context(), "a", 1) },
	} {
		require.PanicsWithValue(t, "newLimiter failed", use)
	}
	require.Zero(t, k.Len())
	fail = false
	require.True(t, k.Allow("a"))
	require.False(t, k.Allow("a"))
}

// TestKeyedCheckesN: Take and WaitN refuse a bad n before they make a key.
func TestKeyedChecksN(t *testing.T) {
	k := NewKeyed(func(string) Limiter { return plainLimiter{} }, KeyedConfig{})
	require.PanicsWithValue(t, "ratelimit: Keyed.Take with n = 0; n must be at least 1", func() { k.Take("a", 0) })
	require.PanicsWithValue(t, "ratelimit: Keyed.WaitN with n = -1; n must be at least 1", func() { _ = k.WaitN(t.Context(), "a", -1) })
	require.Zero(t, k.Len())
}

// TestHeadersReflectConfiguredRate: a token costs a whole number of
// nanoseconds, rounded up, so a bucket of 3 a second takes 1.000000002s to
// refill; the headers, in whole seconds rounded up, said w=2 and a reset of
// 2. They now state the policy as configured.
func TestHeadersReflectConfiguredRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			rate           float64
			burst          int
			policy, header string
		}{
			{3, 3, `"default";q=3;w=1`, `"default";r=0;t=1`},
			{7, 7, `"default";q=7;w=1`, `"default";r=0;t=1`},
			{7, 14, `"default";q=14;w=2`, `"default";r=0;t=2`},
			{2, 5, `"default";q=5;w=3`, `"default";r=0;t=3`}, // 2.5s
			{1000, 3, `"default";q=3;w=1`, `"default";r=0;t=1`},
		} {
			b := NewTokenBucket(tc.rate, tc.burst)
			h := Middleware(Global(b), MiddlewareConfig{Cost: func(*http.Request) int { return tc.burst }})(okHandler)
			w := get(t, h, "192.0.2.1:1", nil)
			require.Equal(t, http.StatusOK, w.Code)
			require.Equal(t, tc.policy, w.Header().Get("RateLimit-Policy"), "rate %v, burst %d", tc.rate, tc.burst)
			require.Equal(t, tc.header, w.Header().Get("RateLimit"), "rate %v, burst %d", tc.rate, tc.burst)
			require.Equal(t, tc.header[len(tc.header)-1:], w.Header().Get("X-RateLimit-Reset"))
		}
	})
}
