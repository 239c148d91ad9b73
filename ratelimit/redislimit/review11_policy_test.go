package redislimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// Regression: with Redis down, the Decisions of FailOpen and FailClosed
// stated the Limit (the Burst) with a Window of 0, where ratelimit.Decision
// says the Window is the time over which Limit applies, and which the
// Limiter knows from its Config: behind ratelimit.Middleware every response
// said "RateLimit-Policy: ...;q=10;w=0", a quota of 10 per no time at all.
// And FailClosed's refusal said the bucket was full again at once
// (ResetAfter 0) while it told the caller to come back after the Timeout
// (RetryAfter): "RateLimit: r=0;t=0" and "X-RateLimit-Reset: 0" beside
// "Retry-After: 1", so that a client that reads the reset header asks again
// at once, in a loop, for as long as Redis is down. The Window is the
// Limiter's own; a refusal's ResetAfter is no sooner than its RetryAfter.
func TestReview11PolicyDecisionsStateTheWindow(t *testing.T) {
	gone := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // nothing listens, and no other test can start a server there
	t.Cleanup(func() { _ = gone.Close() })
	for _, p := range []Policy{FailOpen, FailClosed} {
		l := newLimiter(t, Config{Client: gone, Rate: 1, Burst: 10, Policy: p, Timeout: 50 * time.Millisecond})
		d, err := l.TakeContext(context.Background(), "k", 1)
		require.ErrorIs(t, err, ErrUnavailable, "%v", p)
		require.Equal(t, 10, d.Limit, "%v", p)
		require.Equal(t, 10*time.Second, d.Window, "%v: Decision %+v", p, d)
		if !d.Allowed {
			require.GreaterOrEqual(t, d.ResetAfter, d.RetryAfter, "%v: a refusal full again before it may retry: %+v", p, d)
		}

		mw := ratelimit.Middleware(l, ratelimit.MiddlewareConfig{})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		w := httptest.NewRecorder()
		mw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		require.Equal(t, `"default";q=10;w=10`, w.Header().Get("RateLimit-Policy"), "%v", p)
		if p == FailClosed {
			require.Equal(t, http.StatusTooManyRequests, w.Code)
			require.Equal(t, "1", w.Header().Get("Retry-After"))
			require.Equal(t, "1", w.Header().Get("X-RateLimit-Reset"), "the reset header sends clients back before Retry-After")
		}
	}
}
