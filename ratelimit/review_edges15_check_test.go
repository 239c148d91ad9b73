package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

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
		require.EqualError(t, err, "ratelimit: Transports nested over 64 deep; do their Bases lead back to one of them?")
		// RoundTrip's Precheck went round the loop until the stack
		// overflowed, which ends the program: it panics with Check's
		// error now, before it takes anything.
		l := tr.Limiter.(*ratelimit.TokenBucket)
		req := httptest.NewRequest(http.MethodGet, "http://a.test/", nil)
		require.PanicsWithValue(t, err.Error(), func() { _, _ = tr.RoundTrip(req) })
		require.True(t, l.Allow(), "the request took an event")
	}
	// 64 nested are allowed, one more is not.
	deep := &ratelimit.Transport{Limiter: tb(), Base: &edges15Base{}}
	for range 63 {
		deep = &ratelimit.Transport{Limiter: tb(), Base: deep}
	}
	require.NoError(t, deep.Check())
	deeper := &ratelimit.Transport{Limiter: tb(), Base: deep}
	require.Error(t, deeper.Check())
	req := httptest.NewRequest(http.MethodGet, "http://a.test/", nil)
	require.PanicsWithValue(t, deeper.Check().Error(), func() { _, _ = deeper.RoundTrip(req) })
	_, err := deep.RoundTrip(httptest.NewRequest(http.MethodGet, "http://a.test/", nil))
	require.EqualError(t, err, "edges15Base sends nothing", "64 nested Transports send")

	// The order RoundTrip meets the mistakes in: an inner Transport's
	// fields (its Precheck, before the outer wait) before the outer's
	// limiter.
	outer := &ratelimit.Transport{Limiter: &ratelimit.TokenBucket{}, Base: &ratelimit.Transport{}}
	err = outer.Check()
	require.EqualError(t, err, "ratelimit: Transport with neither Limiter nor PerHost")
	require.PanicsWithValue(t, err.Error(), func() { _, _ = outer.RoundTrip(httptest.NewRequest(http.MethodGet, "http://a.test/", nil)) })

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

// fuzzRT is a Base for FuzzTransportCheck: it answers 200, or, with err
// set, says so in Check and panics with it in RoundTrip, as a RoundTripper
// of another package would on the mistake its Check reports.
type fuzzRT struct{ err error }

func (b *fuzzRT) Check() error { return b.err }
func (b *fuzzRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.err != nil {
		panic(b.err.Error())
	}
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// FuzzTransportCheck: Check against a model of a chain of up to three
// Transports, each with a limiter (none, made, zero, zero in a Tally's
// wrapper, or another package's, usable or not), a PerHost (none, made,
// zero, or another package's) and maybe a Key, and at the end a Base (nil, a
// nil pointer, a usable one, one whose Check fails, a breaker.Transport, or
// one of the chain's Transports again). Check returns the model's first
// mistake; where the chain has no loop, RoundTrip panics with exactly that
// message, or sends the request when there is none; a mistake of this
// package's Transports takes no event of the outermost limiter first.
// Middleware, on the first Transport's limiter under Global or on its
// PerHost, panics exactly when the model finds that limiter unusable. The
// request may cost nothing: it then meets no limiter's mistake, but panics
// as well on the Transports' own, and on a loop.
func FuzzTransportCheck(f *testing.F) {
	for _, seed := range [][]byte{
		{1, 0, 0, 0, 2},
		{1, 0, 0, 1, 1, 0, 0, 0, 2},
		{2, 0, 0, 0, 2}, {3, 0, 0, 0, 2}, {5, 0, 0, 0, 2}, {6, 0, 0, 0, 2},
		{0, 1, 1, 0, 2}, {0, 2, 0, 0, 2}, {0, 4, 0, 0, 2},
		{1, 1, 0, 0, 2}, {1, 0, 1, 0, 2}, {0, 0, 0, 0, 2},
		{1, 0, 0, 0, 1}, {1, 0, 0, 0, 3}, {1, 0, 0, 0, 4}, {1, 0, 0, 0, 5}, {1, 0, 0, 0, 6},
		{1, 0, 0, 1, 1, 0, 0, 0, 7},
		{1, 0, 0, 0, 6, 0, 1}, {1, 0, 0, 1, 1, 0, 0, 0, 7, 0, 1}, {0, 0, 0, 0, 2, 1}, // free requests
	} {
		f.Add(seed)
	}
	zeroTB := "ratelimit: use NewTokenBucket; the zero TokenBucket is not usable"
	zeroKeyed := "ratelimit: use NewKeyed; the zero Keyed is not usable"
	foreignErr := errors.New("other: not usable")
	baseErr := errors.New("base: not usable")
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := int(data[0])
			data = data[1:]
			return b
		}
		var tally ratelimit.Tally
		type level struct {
			tr                  *ratelimit.Transport
			bucket              *ratelimit.TokenBucket // a made limiter, to see whether it was taken from
			limiterErr, hostErr string                 // what makes the limiter or PerHost unusable
		}
		var chain []level
		for {
			l := level{tr: &ratelimit.Transport{}}
			switch next() % 7 {
			case 1:
				l.bucket = ratelimit.NewTokenBucket(1, 1)
				l.tr.Limiter = l.bucket
			case 2:
				l.tr.Limiter, l.limiterErr = &ratelimit.TokenBucket{}, zeroTB
			case 3:
				l.tr.Limiter, l.limiterErr = tally.Wrap(&ratelimit.TokenBucket{}), zeroTB
			case 4:
				l.tr.Limiter = &edges15Limiter{}
			case 5:
				l.tr.Limiter, l.limiterErr = &edges15Limiter{foreignErr}, foreignErr.Error()
			case 6:
				l.tr.Limiter, l.limiterErr = tally.Wrap(&edges15Limiter{foreignErr}), foreignErr.Error()
			}
			switch next() % 5 {
			case 1:
				l.tr.PerHost = ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket { return ratelimit.NewTokenBucket(1, 1) }, ratelimit.KeyedConfig{})
			case 2:
				l.tr.PerHost, l.hostErr = &ratelimit.Keyed[string, *ratelimit.TokenBucket]{}, zeroKeyed
			case 3:
				l.tr.PerHost = &edges15Keyed{}
			case 4:
				l.tr.PerHost, l.hostErr = &edges15Keyed{edges15Limiter{foreignErr}}, foreignErr.Error()
			}
			if next()%2 == 1 {
				l.tr.Key = func(*http.Request) string { return "k" }
			}
			if len(chain) > 0 {
				chain[len(chain)-1].tr.Base = l.tr
			}
			chain = append(chain, l)
			if len(chain) == 3 || next()%2 == 0 {
				break
			}
		}
		loop := false
		var baseMsg string // the mistake of the last Base
		last := chain[len(chain)-1].tr
		switch next() % 8 {
		case 0:
			last.Base = nil // http.DefaultTransport: never reached below
		case 1:
			last.Base, baseMsg = (*http.Transport)(nil), "ratelimit: Transport with a nil *http.Transport as Base"
		case 3:
			last.Base, baseMsg = &fuzzRT{baseErr}, baseErr.Error()
		case 4:
			last.Base, baseMsg = &breaker.Transport{MaxHosts: -1, Base: &fuzzRT{}}, "breaker: Transport with negative MaxHosts -1"
		case 5:
			last.Base = &breaker.Transport{Base: &fuzzRT{}}
		case 6, 7:
			last.Base, loop = chain[next()%len(chain)].tr, true
		default:
			last.Base = &fuzzRT{}
		}

		// The model, in the order RoundTrip meets the mistakes: every
		// Transport's fields (its Precheck of its Base finds them before
		// it waits), or the loop; then the limiters, outermost first; then
		// the Base that ends the chain.
		want, ours := "", true
		for _, l := range chain {
			global, perHost := l.tr.Limiter != nil, l.tr.PerHost != nil
			switch {
			case !global && !perHost:
				want = "ratelimit: Transport with neither Limiter nor PerHost"
			case global && perHost:
				want = "ratelimit: Transport with both Limiter and PerHost; nest two Transports to apply both"
			case global && l.tr.Key != nil:
				want = "ratelimit: Transport with Key but no PerHost"
			case l.tr == last && strings.HasPrefix(baseMsg, "ratelimit: Transport with a nil"):
				want = baseMsg
			}
			if want != "" {
				break
			}
		}
		if want == "" && loop {
			want = "ratelimit: Transports nested over 64 deep; do their Bases lead back to one of them?"
		}
		for _, l := range chain {
			if want != "" {
				break
			}
			switch {
			case l.limiterErr != "":
				want, ours = l.limiterErr, false
			case l.hostErr != "":
				want, ours = l.hostErr, false
			}
		}
		if want == "" && baseMsg != "" {
			want, ours = baseMsg, false
		}
		err := chain[0].tr.Check()
		if got := fmt.Sprint(err); (err == nil) != (want == "") || err != nil && got != want {
			t.Fatalf("Check() = %v, want %q", err, want)
		}

		// Middleware on the first Transport's limiters.
		if l := chain[0]; l.tr.Limiter != nil {
			if tk, ok := l.tr.Limiter.(ratelimit.Taker); ok {
				p := edges15Panic(func() { ratelimit.Middleware(ratelimit.Global(tk), ratelimit.MiddlewareConfig{}) })
				if (p == nil) != (l.limiterErr == "") || p != nil && p != l.limiterErr {
					t.Fatalf("Middleware(Global(%T)) panicked with %v, want %q", tk, p, l.limiterErr)
				}
			}
		}
		if l := chain[0]; l.tr.PerHost != nil {
			if kt, ok := l.tr.PerHost.(ratelimit.KeyTaker); ok {
				p := edges15Panic(func() { ratelimit.Middleware(kt, ratelimit.MiddlewareConfig{}) })
				if (p == nil) != (l.hostErr == "") || p != nil && p != l.hostErr {
					t.Fatalf("Middleware(%T) panicked with %v, want %q", kt, p, l.hostErr)
				}
			}
		}

		if want == "" && last.Base == nil {
			return // to the network
		}
		// A request that costs nothing: it uses no limiter, so a limiter's
		// mistake does not show, but one of the Transports' fields, or a
		// loop, does, as for a request that costs an event.
		free := next()%2 == 1
		if free {
			if want != "" && !ours {
				return // the request, which meets no limiter, could go to the network
			}
			for _, l := range chain {
				l.tr.Cost = func(*http.Request) int { return 0 }
			}
		}
		req := httptest.NewRequest(http.MethodGet, "http://a.test/", nil)
		var resp *http.Response
		p := edges15Panic(func() { resp, err = chain[0].tr.RoundTrip(req) })
		if want == "" {
			if p != nil || err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("RoundTrip of a Transport that passed Check: panic %v, error %v", p, err)
			}
			return
		}
		if p != want {
			t.Fatalf("RoundTrip panicked with %v, want Check's %q", p, want)
		}
		if b := chain[0].bucket; b != nil && ours && !b.Allow() {
			t.Fatalf("RoundTrip took an event before panicking with %q", want)
		}
	})
}

// edges15Panicky is a limiter of another package whose Check panics, or
// calls runtime.Goexit.
type edges15Panicky struct {
	edges15Limiter
	goexit bool
}

func (l *edges15Panicky) Check() error {
	if l.goexit {
		runtime.Goexit()
	}
	panic("other: Check panicked")
}

// TestEdges15UserCheckPanics: a limiter's Check is the user's code: its
// panic goes on to the caller of Transport.Check or Middleware as it is
// (not turned into an error), and so does runtime.Goexit; the Transport
// keeps nothing, and Check answers the same when asked again.
func TestEdges15UserCheckPanics(t *testing.T) {
	tr := &ratelimit.Transport{Limiter: &edges15Panicky{}}
	for range 2 {
		require.PanicsWithValue(t, "other: Check panicked", func() { _ = tr.Check() })
	}
	var tally ratelimit.Tally
	require.PanicsWithValue(t, "other: Check panicked", func() {
		ratelimit.Middleware(ratelimit.Global(tally.Wrap(&edges15Panicky{})), ratelimit.MiddlewareConfig{})
	})
	for _, f := range []func(){
		func() { _ = (&ratelimit.Transport{Limiter: &edges15Panicky{goexit: true}}).Check() },
		func() {
			ratelimit.Middleware(ratelimit.Global(&edges15Panicky{goexit: true}), ratelimit.MiddlewareConfig{})
		},
	} {
		returned := make(chan bool, 1)
		go func() {
			defer func() { returned <- false }()
			f()
			returned <- true
		}()
		require.False(t, <-returned, "Goexit did not end the goroutine")
	}
}

// TestEdges15HugeCost: a request that costs math.MaxInt fails at once with
// ErrExceedsBurst through Transport, whatever the limiter, without calling
// Base or taking an event; through Middleware it is refused with 429 and no
// Retry-After (it can never be allowed), and takes nothing either. A
// deadline as far as time goes does not make a wait fail early, and one
// beyond what a window of math.MaxInt64 can reach does.
func TestEdges15HugeCost(t *testing.T) {
	var tally ratelimit.Tally
	keyed := func(cfg ratelimit.KeyedConfig) *ratelimit.Keyed[string, *ratelimit.TokenBucket] {
		return ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket { return ratelimit.NewTokenBucket(1, 1) }, cfg)
	}
	limiters := func() []ratelimit.Taker {
		return []ratelimit.Taker{
			ratelimit.NewTokenBucket(math.Inf(1), 1), ratelimit.NewTokenBucket(1, 1), ratelimit.NewTokenBucket(1e-8, 1),
			ratelimit.NewSlidingWindow(1, math.MaxInt64), ratelimit.NewSlidingWindowCounter(1, math.MaxInt64),
			ratelimit.All(ratelimit.NewTokenBucket(1, 1), ratelimit.NewSlidingWindow(1, time.Hour)),
			tally.Wrap(ratelimit.NewTokenBucket(1, 1)),
			keyed(ratelimit.KeyedConfig{TTL: 1, MaxKeys: 1}).Limiter("k").(ratelimit.Taker),
			keyed(ratelimit.KeyedConfig{TTL: math.MaxInt64, MaxKeys: math.MaxInt}).Limiter("k").(ratelimit.Taker),
		}
	}
	huge := func(*http.Request) int { return math.MaxInt }
	for _, l := range limiters() {
		base := &fuzzRT{}
		called := false
		tr := &ratelimit.Transport{Limiter: l, Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			called = true
			return base.RoundTrip(r)
		}), Cost: huge}
		require.NoError(t, tr.Check())
		_, err := tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://a.test/", nil))
		require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "%T", l)
		require.False(t, called, "%T: Base called", l)
		require.True(t, l.AllowN(1), "%T: an event was taken", l)
	}
	for _, l := range limiters() {
		h := ratelimit.Middleware(ratelimit.Global(l), ratelimit.MiddlewareConfig{Cost: huge})(http.NotFoundHandler())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		require.Equal(t, http.StatusTooManyRequests, w.Code, "%T", l)
		require.Empty(t, w.Header().Get("Retry-After"), "%T", l)
		require.True(t, l.AllowN(1), "%T: an event was taken", l)
	}

	// Deadlines at the end of time, on the bubble's clock.
	synctest.Test(t, func(t *testing.T) {
		far := time.Unix(0, math.MaxInt64)
		window := ratelimit.NewSlidingWindow(1, math.MaxInt64)
		require.True(t, window.Allow())
		ctx, cancel := context.WithDeadline(context.Background(), far)
		defer cancel()
		tr := &ratelimit.Transport{Limiter: window, Base: &fuzzRT{}}
		_, err := tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://a.test/", nil).WithContext(ctx))
		var de *ratelimit.DeadlineError
		require.ErrorAs(t, err, &de, "a wait of a window of MaxInt64 ends after %v", far)
		require.Positive(t, de.Delay)

		bucket := ratelimit.NewTokenBucket(1, 1)
		require.True(t, bucket.Allow())
		tr = &ratelimit.Transport{Limiter: bucket, Base: &fuzzRT{}}
		start := time.Now()
		resp, err := tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://a.test/", nil).WithContext(ctx))
		require.NoError(t, err, "a wait of a second with a deadline at the end of time")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, time.Second, time.Since(start))
	})
}
