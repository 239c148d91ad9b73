package ratelimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// edges15Panic returns what f panics with, or nil.
func edges15Panic(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// edges15Limiter is a limiter of another package that can say it is not
// usable: its Check returns err, and its methods panic with it.
type edges15Limiter struct{ err error }

func (l *edges15Limiter) Check() error { return l.err }
func (l *edges15Limiter) use() {
	if l.err != nil {
		panic(l.err.Error())
	}
}
func (l *edges15Limiter) AllowN(int) bool { l.use(); return true }
func (l *edges15Limiter) Take(int) ratelimit.Decision {
	l.use()
	return ratelimit.Decision{Allowed: true, Remaining: ratelimit.Unknown}
}
func (l *edges15Limiter) WaitN(ctx context.Context, _ int) error { l.use(); return ctx.Err() }

// edges15Keyed is edges15Limiter for PerHost and Middleware.
type edges15Keyed struct{ edges15Limiter }

func (l *edges15Keyed) Take(string, int) ratelimit.Decision { return l.edges15Limiter.Take(1) }
func (l *edges15Keyed) WaitN(ctx context.Context, _ string, n int) error {
	return l.edges15Limiter.WaitN(ctx, n)
}

// TestEdges15CheckAsksOtherLimiters: a limiter of another package with a
// method Check() error is asked by Transport.Check and by Middleware, as the
// zero limiters of this package are found: its error is Check's, and
// Middleware's panic, where the Transport or middleware is built. So is one
// in a Tally's wrapper, or under Global: a zero TokenBucket in a Tally's
// wrapper passed Check, and Middleware, and panicked at the first request.
func TestEdges15CheckAsksOtherLimiters(t *testing.T) {
	var tally ratelimit.Tally
	for name, tr := range map[string]*ratelimit.Transport{
		"zero TokenBucket in Tally":          {Limiter: tally.Wrap(&ratelimit.TokenBucket{})},
		"zero TokenBucket in two Tallies":    {Limiter: tally.Wrap(tally.Wrap(&ratelimit.TokenBucket{}))},
		"zero Combined in Tally":             {Limiter: tally.Wrap(&ratelimit.Combined{})},
		"zero SlidingWindowCounter in Tally": {Limiter: tally.Wrap(&ratelimit.SlidingWindowCounter{})},
	} {
		err := tr.Check()
		req := httptest.NewRequest(http.MethodGet, "http://a.test/", nil)
		p := edges15Panic(func() { _, _ = tr.RoundTrip(req) })
		require.NotNil(t, p, "%s: RoundTrip did not panic", name)
		if err == nil || err.Error() != p {
			t.Errorf("%s: Check() = %v, want the panic RoundTrip raises: %v", name, err, p)
		}
	}
	for name, kt := range map[string]ratelimit.KeyTaker{
		"Global(zero TokenBucket in Tally)": ratelimit.Global(tally.Wrap(&ratelimit.TokenBucket{})),
	} {
		require.PanicsWithValue(t, "ratelimit: use NewTokenBucket; the zero TokenBucket is not usable",
			func() { ratelimit.Middleware(kt, ratelimit.MiddlewareConfig{}) }, name)
	}

	// A limiter of another package says what is wrong with it.
	bad := errors.New("other: not usable")
	require.ErrorIs(t, (&ratelimit.Transport{Limiter: &edges15Limiter{bad}}).Check(), bad)
	require.ErrorIs(t, (&ratelimit.Transport{Limiter: tally.Wrap(&edges15Limiter{bad})}).Check(), bad)
	require.ErrorIs(t, (&ratelimit.Transport{PerHost: &edges15Keyed{edges15Limiter{bad}}}).Check(), bad)
	require.PanicsWithValue(t, bad.Error(), func() { ratelimit.Middleware(&edges15Keyed{edges15Limiter{bad}}, ratelimit.MiddlewareConfig{}) })
	require.PanicsWithValue(t, bad.Error(), func() {
		ratelimit.Middleware(ratelimit.Global(tally.Wrap(&edges15Limiter{bad})), ratelimit.MiddlewareConfig{})
	})
	// And nothing when it is usable.
	require.NoError(t, (&ratelimit.Transport{Limiter: &edges15Limiter{}}).Check())
	require.NoError(t, (&ratelimit.Transport{Limiter: tally.Wrap(&edges15Limiter{})}).Check())
	require.NoError(t, (&ratelimit.Transport{PerHost: &edges15Keyed{}}).Check())
	require.NotNil(t, ratelimit.Middleware(&edges15Keyed{}, ratelimit.MiddlewareConfig{}))
	require.NotNil(t, ratelimit.Middleware(ratelimit.Global(tally.Wrap(&edges15Limiter{})), ratelimit.MiddlewareConfig{}))
}

// edges15Base is a RoundTripper with a Check of its own.
type edges15Base struct{ err error }

func (b *edges15Base) Check() error { return b.err }
func (b *edges15Base) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("edges15Base sends nothing")
}

// TestEdges15CheckChecksBase: Check looked at the Transport's own fields
// only, and said nil for a Transport whose Base would panic at the first
// request: a ratelimit.Transport with no limiter, a breaker.Transport with a
// negative MaxHosts. It now checks a Base that has a method Check() error,
// through any number of nested Transports, and returns its error as it is;
// a chain of Transports that comes back to one of them (which RoundTrip
// would follow, waiting anew at each turn, for ever) is an error, not an
// endless Check.
func TestEdges15CheckChecksBase(t *testing.T) {
	tb := func() ratelimit.Limiter { return ratelimit.NewTokenBucket(1, 1) }
	bad := errors.New("base: not usable")
	for name, tc := range map[string]struct {
		base http.RoundTripper
		want string
	}{
		"Transport without a limiter": {&ratelimit.Transport{}, "ratelimit: Transport with neither Limiter nor PerHost"},
		"breaker with MaxHosts -1":    {&breaker.Transport{MaxHosts: -1}, "breaker: Transport with negative MaxHosts -1"},
		"nested":                      {&ratelimit.Transport{Limiter: tb(), Base: &ratelimit.Transport{Limiter: tb(), Base: &breaker.Transport{MaxHosts: -1}}}, "breaker: Transport with negative MaxHosts -1"},
		"a Base's own Check":          {&edges15Base{bad}, bad.Error()},
		"nested zero limiter":         {&ratelimit.Transport{Limiter: &ratelimit.TokenBucket{}}, "ratelimit: use NewTokenBucket; the zero TokenBucket is not usable"},
	} {
		tr := &ratelimit.Transport{Limiter: tb(), Base: tc.base}
		err := tr.Check()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: Check() = %v, want %q", name, err, tc.want)
		}
	}
	require.ErrorIs(t, (&ratelimit.Transport{Limiter: tb(), Base: &edges15Base{bad}}).Check(), bad)

	// A chain that comes back: to itself, or through another.
	self := &ratelimit.Transport{Limiter: tb()}
	self.Base = self
	a, b := &ratelimit.Transport{Limiter: tb()}, &ratelimit.Transport{Limiter: tb()}
	a.Base, b.Base = b, a
	for _, tr := range []*ratelimit.Transport{self, a, b} {
		err := tr.Check()
		require.Error(t, err)
		require.True(t, strings.HasPrefix(err.Error(), "ratelimit: "), err.Error())
	}

	// Usable chains pass.
	for _, base := range []http.RoundTripper{nil, http.DefaultTransport, &breaker.Transport{}, &edges15Base{},
		&ratelimit.Transport{Limiter: tb(), Base: &ratelimit.Transport{Limiter: tb(), Base: &breaker.Transport{}}}} {
		require.NoError(t, (&ratelimit.Transport{Limiter: tb(), Base: base}).Check())
	}
	shared := &ratelimit.Transport{Limiter: tb()} // one Base twice is no loop
	require.NoError(t, (&ratelimit.Transport{Limiter: tb(), Base: &ratelimit.Transport{Limiter: tb(), Base: shared}}).Check())
}

// TestEdges15BadBaseTakesNothing: a Base that is a nil pointer took the
// request's event, then panicked inside Base; so did a Base that is a
// misconfigured Transport (no limiter, or a nil pointer for Base), whose
// Precheck said nil before its RoundTrip panicked. Check now names a nil
// Base, and RoundTrip (or the Precheck of the Transport behind) panics with
// the same message before anything is taken.
func TestEdges15BadBaseTakesNothing(t *testing.T) {
	for _, base := range []http.RoundTripper{
		(*http.Transport)(nil), (*breaker.Transport)(nil), (*ratelimit.Transport)(nil),
		&ratelimit.Transport{}, &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Base: (*breaker.Transport)(nil)},
	} {
		l := ratelimit.NewTokenBucket(1, 1)
		tr := &ratelimit.Transport{Limiter: l, Base: base}
		err := tr.Check()
		require.Error(t, err, "%T", base)
		req := httptest.NewRequest(http.MethodGet, "http://a.test/", nil)
		require.PanicsWithValue(t, err.Error(), func() { _, _ = tr.RoundTrip(req) }, "%T", base)
		require.True(t, l.Allow(), "%T: the request took an event", base)
	}
}
