package ratelimit

import (
	"net/http"
	"testing"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestTransportCtxPanicClosesBody: the request's ctx is the caller's code.
// One that panicked at Transport's first look at it (is the ctx done?) left
// the body of a request never sent open: the close that a panic of Cost,
// Key or the limiter gets was set up after that look. Every look closes it.
func TestTransportCtxPanicClosesBody(t *testing.T) {
	for _, c := range []struct {
		name string
		tr   func(base http.RoundTripper) *Transport
	}{
		{"Limiter", func(base http.RoundTripper) *Transport {
			return &Transport{Base: base, Limiter: NewTokenBucket(1000, 10)}
		}},
		{"PerHost", func(base http.RoundTripper) *Transport {
			return &Transport{Base: base, PerHost: NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1000, 10) }, KeyedConfig{})}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			testutil.CtxPanicClosesBody(t, func(base http.RoundTripper) http.RoundTripper { return c.tr(base) })
		})
	}
}
