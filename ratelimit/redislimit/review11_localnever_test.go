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

// Regression: with Redis down, FailLocal refused a call for more events than
// its in-process bucket holds at most (LocalShare of the Burst) but no more
// than the Burst with a RetryAfter of ratelimit.Never, which means "no wait
// would change it" (TakeContext's doc keeps it for calls above the Burst).
// A wait does change it: once Redis is back the call can be allowed, and
// WaitN keeps asking for it. Behind ratelimit.Middleware such a request got
// 429 without Retry-After, as a request that can never pass does, and a
// caller that trusts Never gives up for good. The refusal says when to ask
// again, as FailClosed's does: after the Timeout.
func TestReview11FailLocalAboveLocalBurstIsNotNever(t *testing.T) {
	gone := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // nothing listens, and no other test can start a server there
	t.Cleanup(func() { _ = gone.Close() })
	const timeout = 50 * time.Millisecond
	for _, limits := range [][]Limit{nil, {{Rate: 1, Burst: 20}}} {
		l := newLimiter(t, Config{Client: gone, Rate: 1, Burst: 10, Policy: FailLocal, LocalShare: 0.25,
			Timeout: timeout, Limits: limits})
		d, err := l.TakeContext(context.Background(), "k", 5) // the local burst is 2
		require.ErrorIs(t, err, ErrUnavailable)
		require.False(t, d.Allowed)
		require.Equal(t, timeout, d.RetryAfter, "5 events of a Burst of 10, Redis down, Limits %v", limits)

		d, err = l.TakeContext(context.Background(), "k", 11) // above the Burst: never
		require.ErrorIs(t, err, ErrUnavailable)
		require.Equal(t, ratelimit.Never, d.RetryAfter)

		mw := ratelimit.Middleware(l, ratelimit.MiddlewareConfig{Cost: func(*http.Request) int { return 5 }})(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		w := httptest.NewRecorder()
		mw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		require.Equal(t, http.StatusTooManyRequests, w.Code)
		require.Equal(t, "1", w.Header().Get("Retry-After"), "a request that can pass once Redis is back")
	}
}
