package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// Regression: Middleware over a Keyed asks a key's limiter that has
// TakeContext with the request's ctx, and that decision may wait (for Redis,
// in a redislimit Handle). The Keyed marked the key used when the call began
// but did not count it as in use while the decision was under way, as it
// does for a WaitN: with MaxKeys reached, the new keys of other requests
// could evict the key in the middle of its own call, and the key's next
// request got a new limiter, with a fresh allowance (for a limiter that
// keeps its state in the process). Right: a key whose decision is under way
// is never evicted, as a key with waiters is not.
func TestReview13KeyedKeepsAKeyDecidingWithCtx(t *testing.T) {
	made := map[string]int{}
	var keyed *ratelimit.Keyed[string, ratelimit.Taker]
	keyed = ratelimit.NewKeyed(func(key string) ratelimit.Taker {
		made[key]++
		lim := &oneCtxTaker{t: t, d: ratelimit.Decision{Allowed: true}}
		if key == "a" {
			// While a's decision is under way, other requests bring new
			// keys, more than MaxKeys.
			lim.during = func() {
				for _, other := range []string{"b", "c", "d"} {
					keyed.Get(other)
				}
			}
		}
		return lim
	}, ratelimit.KeyedConfig{MaxKeys: 1})
	mw := ratelimit.Middleware(keyed, ratelimit.MiddlewareConfig{
		Key: func(r *http.Request) string { return r.URL.Path[1:] },
	})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	mw.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/a", nil))
	if made["a"] != 1 {
		t.Fatalf("a's limiter made %d times during its call, want 1", made["a"])
	}
	if lim := keyed.Get("a").(*oneCtxTaker); lim.ctx == nil {
		t.Fatal("a's limiter was evicted during its decision: Get made a new one")
	}
}
