package redislimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// Regression: every entry point panicked on the empty key ("redislimit: Take
// with empty key"), where a ratelimit.Keyed, which a Limiter stands in for as
// a KeyTaker and KeyWaiter, takes "" as a key like any other. Behind
// ratelimit.Middleware a request whose key is "" crashed its handler: one
// whose Key function found no API key, or, with the default Key, every
// request of a server on a Unix socket, whose RemoteAddr is empty. The empty
// key is a key like any other at every entry point: one bucket, shared by the
// calls that give it, apart from every other key's.
func TestReview12EmptyKeyIsAKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l := newLimiter(t, Config{Client: b.client(t), Rate: 1e-3, Burst: 4, Prefix: b.prefix})
		ctx := context.Background()
		noPanic := func(what string, f func()) {
			t.Helper()
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%s with the empty key panicked: %v", what, p)
				}
			}()
			f()
		}
		noPanic("Key", func() { require.Equal(t, b.prefix+"{\x00}", l.Key("")) }) // a zero byte keeps the hash tag from being empty
		noPanic("TakeContext", func() {
			d, err := l.TakeContext(ctx, "", 1)
			require.NoError(t, err)
			require.True(t, d.Allowed)
			require.Equal(t, 3, d.Remaining)
		})
		noPanic("Take", func() { require.True(t, l.Take("", 1).Allowed) })
		noPanic("AllowN", func() {
			ok, err := l.AllowN(ctx, "", 1)
			require.NoError(t, err)
			require.True(t, ok)
		})
		noPanic("Allow", func() {
			ok, err := l.Allow(ctx, "")
			require.NoError(t, err)
			require.True(t, ok)
		})
		noPanic("WaitN", func() {
			dl, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			require.ErrorIs(t, l.WaitN(dl, "", 1), ratelimit.ErrWouldExceedDeadline, "the bucket of \"\" is empty")
		})
		d, err := l.TakeContext(ctx, "other", 1)
		require.NoError(t, err)
		require.Equal(t, 3, d.Remaining, "another key shares the bucket of \"\"")
		noPanic("Reset", func() { require.NoError(t, l.Reset(ctx, "")) })
		noPanic("For", func() {
			h := l.For("")
			require.True(t, h.Take(1).Allowed, "Reset of \"\" left it empty")
			require.True(t, h.AllowN(1))
			require.NoError(t, h.WaitN(ctx, 1))
		})
		noPanic("Middleware", func() {
			mw := ratelimit.Middleware(l, ratelimit.MiddlewareConfig{Key: func(*http.Request) string { return "" }})(
				http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			w := httptest.NewRecorder()
			mw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
			require.Equal(t, http.StatusOK, w.Code, "the last event of the bucket of \"\"")
			w = httptest.NewRecorder()
			mw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
			require.Equal(t, http.StatusTooManyRequests, w.Code)
		})
		noPanic("Middleware, a Unix socket's request", func() {
			require.NoError(t, l.Reset(ctx, ""))
			mw := ratelimit.Middleware(l, ratelimit.MiddlewareConfig{})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = "" // as net/http sets it for a Unix socket's peer
			w := httptest.NewRecorder()
			mw.ServeHTTP(w, r)
			require.Equal(t, http.StatusOK, w.Code)
		})
	})
}
