package retry_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// chain15Base is a RoundTripper of the user's with a Check method.
type chain15Base struct{ err error }

func (b *chain15Base) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("chain15Base sends nothing")
}

func (b *chain15Base) Check() error { return b.err }

// checker is what every Transport of the library has.
type checker interface {
	http.RoundTripper
	Check() error
}

// TestChain15CheckSeesDownTheChain: the Check of each of the library's
// Transports finds a mistake anywhere under it, however the packages are
// stacked, as ratelimit.Transport's did for a chain of its own: retry in
// front of a ratelimit.Transport (the order the README suggests) found
// nothing wrong with the limiter's Transport, which then panicked at the
// first request.
func TestChain15CheckSeesDownTheChain(t *testing.T) {
	tb := func() *ratelimit.TokenBucket { return ratelimit.NewTokenBucket(1, 1) }
	lim := func() *adaptive.Limiter { return adaptive.New(adaptive.Config{}) }
	// Each wraps base in a Transport of one package, made right.
	wraps := map[string]func(base http.RoundTripper) checker{
		"retry":     func(b http.RoundTripper) checker { return &retry.Transport{Base: b} },
		"breaker":   func(b http.RoundTripper) checker { return &breaker.Transport{Base: b} },
		"ratelimit": func(b http.RoundTripper) checker { return &ratelimit.Transport{Limiter: tb(), Base: b} },
		"adaptive":  func(b http.RoundTripper) checker { return &adaptive.Transport{Limiter: lim(), Base: b} },
	}
	// Each is a Transport of one package with a mistake, and the error its
	// own Check gives.
	bad := map[string]checker{
		"retry":     &retry.Transport{Policy: retry.Policy{MaxAttempts: -2}},
		"breaker":   &breaker.Transport{MaxHosts: -1},
		"ratelimit": &ratelimit.Transport{},
		"adaptive":  &adaptive.Transport{},
	}
	for outer, wrap := range wraps {
		for inner, b := range bad {
			want := b.Check()
			require.Error(t, want, inner)
			got := wrap(b).Check()
			require.EqualError(t, got, want.Error(), "%s over a bad %s", outer, inner)
			// Two deep, with a good one of each package in between.
			for middle, w := range wraps {
				got := wrap(w(b)).Check()
				require.EqualError(t, got, want.Error(), "%s over %s over a bad %s", outer, middle, inner)
			}
			// Good all the way down.
			require.NoError(t, wrap(wraps[inner](nil)).Check(), "%s over a good %s", outer, inner)
		}
		// The user's Base at the bottom is asked, its error returned as it is.
		mine := errors.New("the user's Base is not set up")
		require.Equal(t, mine, wrap(wraps["breaker"](&chain15Base{err: mine})).Check(), outer)
		require.NoError(t, wrap(wraps["breaker"](&chain15Base{})).Check(), outer)
		// A zero limiter inside ratelimit's Transport, under another's.
		require.ErrorContains(t, wrap(&ratelimit.Transport{Limiter: &ratelimit.TokenBucket{}}).Check(), "ratelimit: ", outer)
		// A Base that is a nil pointer: named by the Transport whose Base it is.
		got := wrap(wraps["retry"]((*http.Transport)(nil))).Check()
		require.EqualError(t, got, "retry: Transport with a nil *http.Transport as Base", outer)
		got = wrap((*breaker.Transport)(nil)).Check()
		require.EqualError(t, got, outer+": Transport with a nil *breaker.Transport as Base")
	}
}

// TestChain15CheckEndsOnALoop: Transports of several packages whose Bases
// lead back to one of them make Check fail, not recurse until the stack
// overflows; 64 of the library's Transports down one chain are fine, 65 are
// not, whatever their packages.
func TestChain15CheckEndsOnALoop(t *testing.T) {
	r := &retry.Transport{}
	b := &breaker.Transport{Base: r}
	l := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Base: b}
	r.Base = l
	for _, c := range []checker{r, b, l} {
		err := c.Check()
		require.Error(t, err)
		require.Contains(t, err.Error(), "Transports nested over 64 deep")
	}
	var chain http.RoundTripper = &chain15Base{}
	n := 0
	for n < 64 {
		switch n % 3 {
		case 0:
			chain = &retry.Transport{Base: chain}
		case 1:
			chain = &breaker.Transport{Base: chain}
		case 2:
			chain = &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Base: chain}
		}
		n++
		require.NoError(t, chain.(checker).Check(), "%d Transports", n)
	}
	over := &retry.Transport{Base: chain}
	err := over.Check()
	require.Error(t, err)
	require.True(t, strings.HasSuffix(err.Error(), ": Transports nested over 64 deep; do their Bases lead back to one of them?"), err.Error())
}

// TestChain15RoundTripLooksAtItsOwnFieldsOnly: retry.Transport's RoundTrip
// checks its own Policy on each request, as before; the chain under it is
// Check's to walk, once, where the client is built, not on every request.
func TestChain15RoundTripLooksAtItsOwnFieldsOnly(t *testing.T) {
	mine := errors.New("checked")
	base := &chain15Base{err: mine}
	tr := &retry.Transport{Policy: retry.Policy{MaxAttempts: 1, MaxElapsed: time.Second}, Base: base}
	require.Equal(t, mine, tr.Check())
	req, err := http.NewRequest(http.MethodGet, "http://a.test/", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.ErrorContains(t, err, "chain15Base sends nothing")
}

// TestChain15RoundTripEndsOnALoop: Transports of retry, breaker and adaptive
// whose Bases lead back to one of them, with no ratelimit.Transport among
// them, make RoundTrip panic with Check's error (and close the request's
// body), where it went round until the stack overflowed: a fatal error that
// ends the program, not a panic.
func TestChain15RoundTripEndsOnALoop(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(64 << 20))
	lim := adaptive.New(adaptive.Config{})
	loops := map[string]func() checker{
		"breaker-breaker": func() checker { b := &breaker.Transport{}; b.Base = b; return b },
		"retry-breaker": func() checker {
			r := &retry.Transport{Policy: retry.Policy{MaxAttempts: 1}}
			r.Base = &breaker.Transport{Base: r}
			return r
		},
		"breaker-retry": func() checker {
			b := &breaker.Transport{}
			b.Base = &retry.Transport{Policy: retry.Policy{MaxAttempts: 1}, Base: b}
			return b
		},
		"adaptive-breaker": func() checker {
			a := &adaptive.Transport{Limiter: lim}
			a.Base = &breaker.Transport{Base: a}
			return a
		},
	}
	for name, mk := range loops {
		tr := mk()
		err := tr.Check()
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "Transports nested over 64 deep", name)
		body := &chain15Body{}
		req, rerr := http.NewRequest(http.MethodPost, "http://a.test/", body)
		require.NoError(t, rerr)
		var p any
		func() {
			defer func() { p = recover() }()
			_, _ = tr.RoundTrip(req)
		}()
		require.NotNil(t, p, name)
		require.Contains(t, fmt.Sprint(p), "Transports nested over 64 deep", name)
		require.True(t, body.closed, "%s: the request's body was left open", name)
	}
	require.Zero(t, lim.InFlight(), "a Ticket was kept")
}

type chain15Body struct{ closed bool }

func (b *chain15Body) Read([]byte) (int, error) { return 0, io.EOF }
func (b *chain15Body) Close() error             { b.closed = true; return nil }
