package redislimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// Regression: a caller's ctx is the caller's code, and its Done was called
// after the call took a place among the Limiter's round trips under way: a
// panic there kept the place for good, and with MaxRoundTrips 1 every later
// call queued behind a round trip that never ends, and followed the Policy
// at its Timeout. Whichever method call of ctx panics, the Limiter is left
// whole.
func TestCtxPanicKeepsNoRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, ctxTimeouts := range []bool{true, false} {
			// Roomy timeouts: the test is about places held after a ctx
			// panic, not about time, and a loaded machine may take
			// seconds over a round trip.
			c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: 20 * time.Second,
				ReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxRetries: -1,
				ContextTimeoutEnabled: ctxTimeouts})
			t.Cleanup(func() { _ = c.Close() })
			l := newLimiter(t, Config{Client: c, Rate: 1000, Burst: 1000, Prefix: b.prefix, MaxRoundTrips: 1,
				Timeout: 20 * time.Second})
			bg := context.Background()
			for n := int32(1); ; n++ {
				ctx := &testutil.OnceCtx{Context: bg, PanicAt: n}
				r := testutil.PanicOf(func() { _, _ = l.TakeContext(ctx, "k", 1) })
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
					l.batch.mu.Lock()
					u := l.batch.underway
					l.batch.mu.Unlock()
					if u == 0 {
						break
					}
					require.False(t, time.Now().After(deadline),
						"ContextTimeoutEnabled=%v, ctx panicking at call %d: %d round trips hold a place", ctxTimeouts, n, u)
				}
				d, err := l.TakeContext(bg, "k", 1)
				require.NoError(t, err, "ContextTimeoutEnabled=%v, ctx panicking at call %d", ctxTimeouts, n)
				require.True(t, d.Allowed)
				if r == nil {
					break
				}
				require.Equal(t, testutil.ErrCtxPanic, r)
			}
		}
	})
}
