package redislimit

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// TestEdges14_TransportCheckFindsZeroHandle: ratelimit.Transport.Check
// returns the mistake RoundTrip would panic with. A Transport whose Limiter
// was the zero Handle (bare, or in a Tally's wrapper), or whose PerHost was
// the zero Limiter, passed Check and panicked at its first request with
// "redislimit: use ..."; Middleware, built on the zero Limiter or on Global
// of the zero Handle, took it and panicked at its first request. Check found
// only the limiters of package ratelimit, by an unexported method that a
// type of this module cannot have. Handle and Limiter now have Check, which
// Transport.Check and Middleware ask.
func TestEdges14_TransportCheckFindsZeroHandle(t *testing.T) {
	require.EqualError(t, (&Limiter{}).Check(), errZeroLimiter)
	require.EqualError(t, (*Limiter)(nil).Check(), errZeroLimiter)
	require.EqualError(t, (&Handle{}).Check(), errZeroHandle)
	require.EqualError(t, (*Handle)(nil).Check(), errZeroHandle)

	var tally ratelimit.Tally
	for name, tr := range map[string]*ratelimit.Transport{
		"zero Handle":          {Limiter: &Handle{}},
		"zero Handle in Tally": {Limiter: tally.Wrap(&Handle{})},
		"zero Limiter":         {PerHost: &Limiter{}},
	} {
		err := tr.Check()
		req := httptest.NewRequest(http.MethodGet, "http://a.test/", nil)
		p := panicValue(func() { _, _ = tr.RoundTrip(req) })
		require.NotNil(t, p, "%s: RoundTrip did not panic", name)
		if err == nil || err.Error() != p {
			t.Errorf("%s: Check() = %v, want the panic RoundTrip raises: %v", name, err, p)
		}
	}
	for name, kt := range map[string]ratelimit.KeyTaker{
		"zero Limiter":                 &Limiter{},
		"Global(zero Handle)":          ratelimit.Global(&Handle{}),
		"Global(zero Handle in Tally)": ratelimit.Global(tally.Wrap(&Handle{})),
	} {
		want := errZeroLimiter
		if name != "zero Limiter" {
			want = errZeroHandle
		}
		require.PanicsWithValue(t, want, func() { ratelimit.Middleware(kt, ratelimit.MiddlewareConfig{}) }, name)
	}

	// Made ones pass, and build.
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 1})
	require.NoError(t, l.Check())
	require.NoError(t, l.For("k").Check())
	h := *l.For("")
	require.NoError(t, h.Check(), "a copy of a Handle is usable")
	for _, tr := range []*ratelimit.Transport{
		{Limiter: l.For("k")}, {Limiter: tally.Wrap(l.For("k"))}, {PerHost: l},
	} {
		require.NoError(t, tr.Check())
	}
	for _, kt := range []ratelimit.KeyTaker{l, ratelimit.Global(l.For("k")), ratelimit.Global(tally.Wrap(l.For("k")))} {
		require.NotNil(t, ratelimit.Middleware(kt, ratelimit.MiddlewareConfig{}))
	}
}

// panicValue returns what f panics with, or nil.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}
