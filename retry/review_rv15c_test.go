package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

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
// when asked; retry.Transports hedged or not. Against the model: Check
// finds a mistake exactly when the chain has one; a well-formed request with
// a live ctx makes the outermost RoundTrip panic with exactly Check's
// message, or, when Check is nil, answers 200; so does one whose ctx is
// done, or fails with context.Canceled. A request that net/http would
// refuse, or that costs nothing, passes the limiters by: it panics only if
// Check finds a mistake, and answers 200 if not. A request that panics has
// its body closed; no Ticket is kept.
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
		// The breaker.Transports without a mistake of their own.
		var breakers []*breaker.Transport
		reqKind := next() % 4 // 0 live, 1 ctx done, 2 malformed, 3 free (Cost 0)
		hedge := next()%2 == 1
		// build returns a Transport of pkg over base, with a mistake of its
		// own if bad.
		build := func(pkg string, bad bool, base http.RoundTripper) (http.RoundTripper, func(http.RoundTripper)) {
			switch pkg {
			case "retry":
				tr := &retry.Transport{Base: base}
				if bad {
					tr.Policy.MaxAttempts = -2
				}
				if hedge {
					tr.Hedge = &retry.Hedge{Delay: time.Hour, Budget: retry.NewBudget(0.1, 1)}
				}
				return tr, func(b http.RoundTripper) { tr.Base = b }
			case "ratelimit":
				tr := &ratelimit.Transport{Base: base, Limiter: ratelimit.NewTokenBucket(1e9, 1<<20)}
				if bad {
					tr.Limiter = &ratelimit.TokenBucket{}
				}
				if reqKind == 3 {
					tr.Cost = func(*http.Request) int { return 0 }
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
			} else {
				breakers = append(breakers, tr)
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
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if reqKind == 1 {
			cancel()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://h.example/", body)
		require.NoError(t, err)
		// Replayable: retry.Transport sends it through Execute, which
		// looks at the ctx first.
		req.GetBody = func() (io.ReadCloser, error) { return &rv15cBody{Reader: strings.NewReader("x")}, nil }
		if reqKind == 2 {
			req.Header.Set("X-Bad", "a\nb") // net/http refuses to write it
		}
		var resp *http.Response
		got := rv15cPanic(func() { resp, err = top.RoundTrip(req) })
		what := fmt.Sprintf("layers %v, bottom %d, pad %d, request %d, hedge %v", layers, bottom, pad, reqKind, hedge)
		switch {
		case got != nil:
			// A panic is Check's mistake for a request that meets every
			// Transport, or whose ctx is done (each panics on its own
			// mistakes before it looks at the ctx, as Check names them
			// first). A request that passes a limiter by (free, or
			// malformed) may meet a mistake further down first.
			require.NotNil(t, check, what)
			if reqKind < 2 {
				require.Equal(t, check.Error(), got, what)
			}
			require.True(t, body.closed, "the body of a request that panicked is closed: %s", what)
			if s, ok := got.(string); ok && !strings.HasPrefix(s, "user:") {
				// A mistake of the library's Transports is no failure of
				// the host for a breaker above it (edge16).
				for _, bt := range breakers {
					if br := bt.Breaker("h.example"); br != nil {
						require.Zero(t, br.Counts().Failures, "%s: %s", what, s)
					}
				}
			}
		case reqKind == 0:
			// A request that meets every Transport meets the mistake.
			require.Nil(t, check, what)
			fallthrough
		case check == nil && reqKind != 1:
			require.NoError(t, err, what)
			require.Equal(t, http.StatusOK, resp.StatusCode, what)
		case reqKind == 1:
			require.ErrorIs(t, err, context.Canceled, what)
			require.True(t, body.closed, what)
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

// TestRV15cConcurrentCheckAndRoundTrip: Check and RoundTrip of a fixed
// chain of the four packages, from many goroutines at once: no race, the
// same answers every time, for a chain made right and for one with a
// mistake deep down.
func TestRV15cConcurrentCheckAndRoundTrip(t *testing.T) {
	lim := adaptive.New(adaptive.Config{})
	build := func(maxHosts int) checker {
		return &retry.Transport{Hedge: &retry.Hedge{Delay: time.Hour, Budget: retry.NewBudget(0.1, 1)}, Base: &ratelimit.Transport{
			Limiter: ratelimit.NewTokenBucket(1e9, 1<<20),
			Base:    &adaptive.Transport{Limiter: lim, Base: &breaker.Transport{MaxHosts: maxHosts, Base: &rv15cUserBase{}}},
		}}
	}
	good := build(0)
	bad := build(-1)
	want := bad.Check()
	require.Error(t, want)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if err := good.Check(); err != nil {
					t.Error(err)
				}
				req, _ := http.NewRequest(http.MethodGet, "http://h.example/", nil)
				resp, err := good.RoundTrip(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Error(resp, err)
				}
				if err := bad.Check(); err == nil || err.Error() != want.Error() {
					t.Error(err)
				}
				if got := rv15cPanic(func() { _, _ = bad.RoundTrip(req) }); got != want.Error() {
					t.Error(got)
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, lim.InFlight())
}

// TestRV15cBreakerOverMistake: a breaker.Transport over a Transport of the
// library with a mistake (a ratelimit.Transport with no limiter: not the
// order the README gives, where the breaker is innermost) panics at every
// request with the message Check names. It counted each such panic as a
// failure of the host, as it does any other panic of its Base: after
// FailureThreshold requests the host's breaker opened, and RoundTrip failed
// with ErrOpen instead. (See TestEdge16BreakerOverMistakes.)
func TestRV15cBreakerOverMistake(t *testing.T) {
	b := &breaker.Transport{Base: &ratelimit.Transport{}}
	want := b.Check()
	require.Error(t, want)
	for i := range 20 {
		req, err := http.NewRequest(http.MethodGet, "http://h.example/", nil)
		require.NoError(t, err)
		require.Equal(t, want.Error(), rv15cPanic(func() { _, _ = b.RoundTrip(req) }), "request %d", i)
	}
}

// rv15cOddCheck is a Base of the user's whose Check panics or calls
// runtime.Goexit.
type rv15cOddCheck struct {
	rv15cUserBase
	goexit bool
}

func (b *rv15cOddCheck) Check() error {
	if b.goexit {
		runtime.Goexit()
	}
	panic("user: Check panicked")
}

// TestRV15cUserCheckPanics: the Check of a Base of the user's that panics,
// or calls runtime.Goexit, under each of the four Transports: the panic
// reaches the caller of Check as it is, Goexit ends its goroutine, and the
// chain is whole after (Check holds nothing: RoundTrip still answers).
func TestRV15cUserCheckPanics(t *testing.T) {
	for _, goexit := range []bool{false, true} {
		base := &rv15cOddCheck{goexit: goexit}
		for _, tr := range []checker{
			&retry.Transport{Base: base},
			&breaker.Transport{Base: base},
			&ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1e9, 1<<20), Base: base},
			&adaptive.Transport{Limiter: adaptive.New(adaptive.Config{}), Base: base},
		} {
			done := make(chan any)
			go func() {
				finished := false
				defer func() {
					r := recover()
					if !finished && r == nil {
						r = "goexit"
					}
					done <- r
				}()
				_ = tr.Check()
				finished = true
			}()
			want := any("user: Check panicked")
			if goexit {
				want = "goexit"
			}
			require.Equal(t, want, <-done, "%T", tr)
			req, err := http.NewRequest(http.MethodGet, "http://h.example/", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
	}
}
