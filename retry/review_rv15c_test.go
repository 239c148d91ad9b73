package retry_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/internal/httpx"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// rv15cNilBase is a RoundTripper of the user's that is used as a nil
// pointer: its RoundTrip dereferences it.
type rv15cNilBase struct{ n int }

func (b *rv15cNilBase) RoundTrip(*http.Request) (*http.Response, error) {
	b.n++
	return nil, io.EOF
}

// rv15cBody notes whether it was closed.
type rv15cBody struct {
	io.Reader
	closed bool
}

func (b *rv15cBody) Close() error { b.closed = true; return nil }

// rv15cPanic returns what f panics with, or nil.
func rv15cPanic(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestRV15cNilBasePanicsAsCheckSays: a Base that is a nil pointer (or a nil
// func) under a retry, breaker or adaptive Transport is the mistake Check
// names, and RoundTrip panics with Check's message, before it takes
// anything (a breaker's failure, a Ticket), with the request's body closed,
// as ratelimit.Transport's did already. RoundTrip sent the request into the
// nil Base, whose nil dereference reached the caller with the body left
// open, and each such request counted as a failure of the host's breaker,
// which opened.
func TestRV15cNilBasePanicsAsCheckSays(t *testing.T) {
	lim := adaptive.New(adaptive.Config{})
	for _, nilBase := range []http.RoundTripper{(*rv15cNilBase)(nil), http.RoundTripper((*http.Transport)(nil))} {
		bt := &breaker.Transport{Base: nilBase, Settings: breaker.Settings{FailureThreshold: 1}}
		for name, tr := range map[string]checker{
			"retry":     &retry.Transport{Base: nilBase},
			"breaker":   bt,
			"adaptive":  &adaptive.Transport{Limiter: lim, Base: nilBase},
			"ratelimit": &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Base: nilBase},
		} {
			want := tr.Check()
			require.ErrorContains(t, want, name+": Transport with a nil ", name)
			for range 3 {
				body := &rv15cBody{Reader: strings.NewReader("x")}
				req, err := http.NewRequest(http.MethodPut, "http://h.example/", body)
				require.NoError(t, err)
				got := rv15cPanic(func() { _, _ = tr.RoundTrip(req) })
				require.Equal(t, want.Error(), got, name)
				require.True(t, body.closed, "%s: the body of a request that panicked is closed", name)
			}
		}
		require.Nil(t, bt.Breaker("h.example"), "no breaker made for a request that was never sent")
		require.Zero(t, lim.InFlight(), "no Ticket kept")
	}
}

// TestRV15cBreakerCheckNamesTheLoopFirst: breaker.Transport's RoundTrip
// refuses a loop of Bases before it looks at its Settings (which it does
// only as it makes a host's breaker), so its Check names the loop first,
// as the panic a request meets.
func TestRV15cBreakerCheckNamesTheLoopFirst(t *testing.T) {
	b := &breaker.Transport{MaxHosts: -1}
	b.Base = &retry.Transport{Base: b}
	want := b.Check()
	require.Error(t, want)
	req, err := http.NewRequest(http.MethodGet, "http://h.example/", nil)
	require.NoError(t, err)
	require.Equal(t, want.Error(), rv15cPanic(func() { _, _ = b.RoundTrip(req) }))
	require.Contains(t, want.Error(), "breaker: Transports nested over 64 deep")

	// So is a Base that is nil but for its type.
	b = &breaker.Transport{MaxHosts: -1, Base: (*rv15cNilBase)(nil)}
	want = b.Check()
	require.Equal(t, want.Error(), rv15cPanic(func() { _, _ = b.RoundTrip(req) }))
	require.Contains(t, want.Error(), "breaker: Transport with a nil ")
}

// TestRV15cChainWalkAllocatesNothing: the walk down the chain of Bases that
// every RoundTrip of the four Transports makes (httpx.ChainOver) allocates
// nothing, whatever the packages in the chain: it allocated a method value
// for each of the library's Transports it passed, two allocations per
// request and Transport in a chain of three.
func TestRV15cChainWalkAllocatesNothing(t *testing.T) {
	chain := http.DefaultTransport
	for range 2 {
		chain = &retry.Transport{Base: chain}
		chain = &ratelimit.Transport{Base: chain, Limiter: ratelimit.NewTokenBucket(1, 1)}
		chain = &adaptive.Transport{Base: chain, Limiter: adaptive.New(adaptive.Config{})}
		chain = &breaker.Transport{Base: chain}
	}
	allocs := testing.AllocsPerRun(100, func() {
		if httpx.ChainOver(chain, 1) {
			t.Fatal("a chain of 8 is not over")
		}
	})
	require.Zero(t, allocs)
}

// rv15cUserBase is a RoundTripper of the user's at the bottom of a chain:
// it answers 200 at once, or, with err set, has a Check that returns err
// and a RoundTrip that panics with its message, as the user's own
// misconfigured Base would (after closing the body it was handed: a panic
// inside the Base is the Base's to clean up after).
type rv15cUserBase struct{ err error }

func (b *rv15cUserBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if b.err != nil {
		panic(b.err.Error())
	}
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

func (b *rv15cUserBase) Check() error { return b.err }

// rv15cPlain is a RoundTripper of the user's with no Check.
type rv15cPlain struct{ rv15cUserBase }

func (b *rv15cPlain) RoundTrip(req *http.Request) (*http.Response, error) {
	return b.rv15cUserBase.RoundTrip(req)
}

// FuzzRV15cChainCheck: a chain of one to four of the library's Transports,
// of any of the four packages in any order, each made right or with a
// mistake of its own fields or limiter, over a Base of the user's (with or
// without a Check, misconfigured or not), a Base that is nil but for its
// type, or a loop back to the top, padded to exactly 64 or 65 Transports
// when asked. Against the model: Check finds a mistake exactly when the
// chain has one; a well-formed request with a live ctx makes the outermost
// RoundTrip panic with exactly Check's message, the request's body closed
// and no Ticket kept, or, when Check is nil, answers 200.
func FuzzRV15cChainCheck(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0}, {1, 0, 1}, {2, 1, 1, 3, 0, 2}, {3, 2, 0, 0, 1, 0, 4},
		{0, 0, 1, 1, 0, 1, 2, 0, 1, 3, 0, 0, 3},
		{0, 0, 1, 1, 0, 1, 2, 0, 1, 3, 0, 0, 4},
		{0, 0, 1, 2, 0, 0, 5}, {3, 0, 0, 6}, {1, 1, 0, 5, 1}, {2, 0, 0, 0, 2}, {0, 0, 0, 0, 1, 1, 2, 1},
	} {
		f.Add(seed)
	}
	pkgs := []string{"retry", "ratelimit", "adaptive", "breaker"}
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := int(data[0])
			data = data[1:]
			return b
		}
		var limiters []*adaptive.Limiter
		// build returns a Transport of pkg over base, with a mistake of its
		// own if bad.
		build := func(pkg string, bad bool, base http.RoundTripper) (http.RoundTripper, func(http.RoundTripper)) {
			switch pkg {
			case "retry":
				tr := &retry.Transport{Base: base}
				if bad {
					tr.Policy.MaxAttempts = -2
				}
				return tr, func(b http.RoundTripper) { tr.Base = b }
			case "ratelimit":
				tr := &ratelimit.Transport{Base: base, Limiter: ratelimit.NewTokenBucket(1e9, 1<<20)}
				if bad {
					tr.Limiter = &ratelimit.TokenBucket{}
				}
				return tr, func(b http.RoundTripper) { tr.Base = b }
			case "adaptive":
				tr := &adaptive.Transport{Base: base}
				if !bad {
					tr.Limiter = adaptive.New(adaptive.Config{})
					limiters = append(limiters, tr.Limiter)
				}
				return tr, func(b http.RoundTripper) { tr.Base = b }
			}
			tr := &breaker.Transport{Base: base}
			if bad {
				tr.MaxHosts = -1
			}
			return tr, func(b http.RoundTripper) { tr.Base = b }
		}
		type layer struct {
			pkg string
			bad bool
		}
		var layers []layer
		for n := next()%4 + 1; len(layers) < n; {
			layers = append(layers, layer{pkgs[next()%4], next()%4 == 1})
		}
		bottom := next() % 7 // 0 user ok, 1 user bad, 2 plain, 3 nil-typed user, 4 nil-typed library, 5 loop, 6 nil
		pad := next() % 3    // 0 none, 1 to 64, 2 to 65 Transports in all
		if pad > 0 {
			want := 63 + pad
			for i := 0; len(layers) < want; i++ {
				layers = append(layers, layer{pkgs[i%4], false})
			}
		}
		var base http.RoundTripper
		switch bottom {
		case 0:
			base = &rv15cUserBase{}
		case 1:
			base = &rv15cUserBase{err: errors.New("user: Base not set up")}
		case 2:
			base = &rv15cPlain{}
		case 3:
			base = (*rv15cUserBase)(nil)
		case 4:
			base = (*breaker.Transport)(nil)
		default:
			base = nil // 6, or 5 until the loop is closed
		}
		if bottom == 6 {
			base = &rv15cPlain{} // nil would send through http.DefaultTransport
		}
		var setBottom func(http.RoundTripper)
		top := base
		for i := len(layers) - 1; i >= 0; i-- {
			var set func(http.RoundTripper)
			top, set = build(layers[i].pkg, layers[i].bad, top)
			if i == len(layers)-1 {
				setBottom = set
			}
		}
		if bottom == 5 {
			setBottom(top)
		}
		// The model: is there a mistake anywhere?
		anyBad := bottom == 1 || bottom == 3 || bottom == 4 || bottom == 5 || pad == 2
		for _, l := range layers {
			anyBad = anyBad || l.bad
		}
		check := top.(checker).Check()
		require.Equal(t, anyBad, check != nil, "layers %v, bottom %d, pad %d: %v", layers, bottom, pad, check)

		body := &rv15cBody{Reader: strings.NewReader("x")}
		req, err := http.NewRequest(http.MethodPut, "http://h.example/", body)
		require.NoError(t, err)
		var resp *http.Response
		got := rv15cPanic(func() { resp, err = top.RoundTrip(req) })
		if check == nil {
			require.Nil(t, got)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
		} else {
			require.Equal(t, check.Error(), got, "layers %v, bottom %d, pad %d", layers, bottom, pad)
			require.True(t, body.closed, "the body of a request that panicked is closed: layers %v, bottom %d, pad %d: %v", layers, bottom, pad, got)
		}
		for _, l := range limiters {
			require.Zero(t, l.InFlight(), "no Ticket kept")
		}
	})
}

// TestRV15cAdaptivePrecheckNilBase: ratelimit.Transport asks the Precheck
// of an adaptive.Transport under it before it takes an event: with a Base
// that is nil but for its type, that Precheck called the nil breaker's
// Precheck, and the request panicked with a nil dereference, not Check's
// message. The nil Base is not asked now: the request panics as Check says
// when it reaches the adaptive Transport, its body closed.
func TestRV15cAdaptivePrecheckNilBase(t *testing.T) {
	tb := ratelimit.NewTokenBucket(1, 1)
	inner := &adaptive.Transport{Limiter: adaptive.New(adaptive.Config{}), Base: (*breaker.Transport)(nil)}
	top := &ratelimit.Transport{Limiter: tb, Base: inner}
	want := top.Check()
	require.ErrorContains(t, want, "adaptive: Transport with a nil *breaker.Transport as Base")
	body := &rv15cBody{Reader: strings.NewReader("x")}
	req, err := http.NewRequest(http.MethodPut, "http://h.example/", body)
	require.NoError(t, err)
	require.Equal(t, want.Error(), rv15cPanic(func() { _, _ = top.RoundTrip(req) }))
	require.True(t, body.closed)
	require.Zero(t, inner.Limiter.InFlight())
}

// TestRV15cAdaptivePrecheckNoLimiter: an adaptive.Transport with no
// Limiter between two ratelimit.Transports: the outer one's Precheck went
// through it to the inner one's, which panicked with the inner mistake,
// where Check names the adaptive Transport's, which RoundTrip meets first.
func TestRV15cAdaptivePrecheckNoLimiter(t *testing.T) {
	inner := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Base: (*rv15cNilBase)(nil)}
	top := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Base: &adaptive.Transport{Base: inner}}
	want := top.Check()
	require.EqualError(t, want, "adaptive: Transport with nil Limiter")
	req, err := http.NewRequest(http.MethodGet, "http://h.example/", nil)
	require.NoError(t, err)
	require.Equal(t, want.Error(), rv15cPanic(func() { _, _ = top.RoundTrip(req) }))
}

// TestRV15cCheckFollowsPrecheck: ratelimit.Transport asks the Precheck at
// the end of its chain before it waits, and an adaptive.Transport's
// Precheck asks its Base's: a ratelimit.Transport there with a mistake
// panics in its Precheck, before the outer limiter's wait. Check (of the
// outer ratelimit.Transport, or of a retry.Transport in front of it) named
// the outer zero limiter, which RoundTrip never reached.
func TestRV15cCheckFollowsPrecheck(t *testing.T) {
	inner := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Base: (*rv15cNilBase)(nil)}
	mid := &adaptive.Transport{Limiter: adaptive.New(adaptive.Config{}), Base: inner}
	top := &ratelimit.Transport{Limiter: &ratelimit.TokenBucket{}, Base: mid}
	for _, tr := range []checker{top, &retry.Transport{Base: top}, &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1, 1), Base: top}} {
		want := tr.Check()
		require.EqualError(t, want, "ratelimit: Transport with a nil *retry_test.rv15cNilBase as Base")
		req, err := http.NewRequest(http.MethodGet, "http://h.example/", nil)
		require.NoError(t, err)
		require.Equal(t, want.Error(), rv15cPanic(func() { _, _ = tr.RoundTrip(req) }))
	}
}
