package ratelimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// TestRV15aLoopOfFreeRequests: a loop of Bases is refused for every
// request, not only one that waits. A request that costs nothing, or that
// net/http would refuse to send, skips the Precheck of its Base (there is
// nothing to take), and went straight to Base's RoundTrip: round the loop
// until the stack overflowed, which ends the program. RoundTrip panics with
// Check's error instead, as for a request that costs an event.
func TestRV15aLoopOfFreeRequests(t *testing.T) {
	// A small stack: on the defect, the test binary dies at once rather
	// than after a gigabyte of stack.
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	free := func(*http.Request) int { return 0 }
	self := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Cost: free}
	self.Base = self
	a := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1)}
	b := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Base: a}
	a.Base = b
	malformed := func() *http.Request {
		req := httptest.NewRequest(http.MethodGet, "http://a.test/", nil)
		req.Header.Set("Bad\nName", "x") // a header field net/http cannot write
		return req
	}
	for name, tc := range map[string]struct {
		tr  *ratelimit.Transport
		req *http.Request
	}{
		"Cost 0":            {self, httptest.NewRequest(http.MethodGet, "http://a.test/", nil)},
		"malformed request": {a, malformed()},
	} {
		err := tc.tr.Check()
		require.Error(t, err, name)
		require.PanicsWithValue(t, err.Error(), func() { _, _ = tc.tr.RoundTrip(tc.req) }, name)
	}
}

// TestRV15aNestedNegativeCost pins what Transport's doc says of the Cost of
// a Transport nested under another: it is asked only when the request
// reaches it, so a negative Cost panics after the outer Transport took its
// event. (The doc said the outer one took nothing for such a mistake.)
func TestRV15aNestedNegativeCost(t *testing.T) {
	outerLimit := ratelimit.NewTokenBucket(1, 1)
	inner := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Cost: func(*http.Request) int { return -1 }}
	outer := &ratelimit.Transport{Limiter: outerLimit, Base: inner}
	require.NoError(t, outer.Check(), "Check does not ask Cost")
	require.PanicsWithValue(t, "ratelimit: Transport's Cost returned -1; it must be at least 0", func() {
		_, _ = outer.RoundTrip(httptest.NewRequest(http.MethodGet, "http://a.test/", nil))
	})
	require.False(t, outerLimit.Allow(), "the outer Transport's event was taken before the nested Cost was asked")
}

// TestRV15aLoopThroughAnotherPackage: a loop of Bases that passes through a
// Transport of another of the library's packages (breaker's, adaptive's)
// comes back to the ratelimit.Transport, which Check reports ("a chain of the
// library's Transports more than 64 long"), and which RoundTrip must panic
// with before it takes anything, as for a loop of its own Transports. It
// went round until the stack overflowed: through breaker.Transport's
// RoundTrip for a request that costs nothing, through adaptive.Transport's
// Precheck, which passes on its Base's, for one that costs an event.
func TestRV15aLoopThroughAnotherPackage(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	viaBreaker := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Cost: func(*http.Request) int { return 0 }}
	viaBreaker.Base = &breaker.Transport{Base: viaBreaker}
	limit := ratelimit.NewTokenBucket(1, 1)
	viaAdaptive := &ratelimit.Transport{Limiter: limit}
	viaAdaptive.Base = &adaptive.Transport{Limiter: adaptive.New(adaptive.Config{}), Base: viaAdaptive}
	for name, tr := range map[string]*ratelimit.Transport{"breaker": viaBreaker, "adaptive": viaAdaptive} {
		err := tr.Check()
		require.ErrorContains(t, err, "Transports nested over 64 deep", name)
		p := edges15Panic(func() { _, _ = tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://a.test/", nil)) })
		require.NotNil(t, p, name)
		require.Contains(t, fmt.Sprint(p), "Transports nested over 64 deep", name)
	}
	require.True(t, limit.Allow(), "the request took an event")
}

// TestRV15aLoopBeforeLimiters: RoundTrip panics on a loop of Bases through
// another package's Transport before it uses its limiter, so Check, and the
// Check of a Transport in front, report the loop first, not the zero
// limiter that RoundTrip never reaches.
func TestRV15aLoopBeforeLimiters(t *testing.T) {
	tr := &ratelimit.Transport{Limiter: &ratelimit.TokenBucket{}}
	tr.Base = &breaker.Transport{Base: tr}
	front := &breaker.Transport{Base: tr}
	for name, c := range map[string]interface {
		http.RoundTripper
		Check() error
	}{"ratelimit": tr, "breaker in front": front} {
		err := c.Check()
		require.Error(t, err, name)
		p := edges15Panic(func() { _, _ = c.RoundTrip(httptest.NewRequest(http.MethodGet, "http://a.test/", nil)) })
		require.Equal(t, err.Error(), p, "%s: Check's error, RoundTrip's panic", name)
	}
}
