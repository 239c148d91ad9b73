package retry_test

import (
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
