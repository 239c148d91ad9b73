package ratelimit

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type countClose struct {
	*strings.Reader
	closed atomic.Int32
}

func (c *countClose) Close() error { c.closed.Add(1); return nil }

// TestTransportUserPanicClosesBody: a panic in user code that Transport runs
// before it sends a request (Cost, Key, a Tally's OnWait) reaches the caller
// with the request's body closed, as a RoundTripper must close the body of a
// request it does not send: OnWait's panic left it open.
func TestTransportUserPanicClosesBody(t *testing.T) {
	keyed := func() KeyWaiter {
		return NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	}
	var tally Tally
	tally.OnWait = func(time.Duration, error) { panic("OnWait") }
	base := rtFunc(func(*http.Request) (*http.Response, error) { panic("sent") })
	for name, tr := range map[string]*Transport{
		"Cost":   {Base: base, Limiter: NewTokenBucket(1, 1), Cost: func(*http.Request) int { panic("Cost") }},
		"Key":    {Base: base, PerHost: keyed(), Key: func(*http.Request) string { panic("Key") }},
		"OnWait": {Base: base, Limiter: tally.Wrap(NewTokenBucket(1, 1))},
	} {
		t.Run(name, func(t *testing.T) {
			body := &countClose{Reader: strings.NewReader("x")}
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://a.test/", body)
			require.NoError(t, err)
			require.PanicsWithValue(t, name, func() { _, _ = tr.RoundTrip(req) })
			require.EqualValues(t, 1, body.closed.Load(), "the body of a request not sent was left open")
		})
	}
}
