package redislimit

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// TestAllowNIsAYesOrNo pins the library's one meaning per name: AllowN and
// Allow answer yes or no, as ratelimit's do, and TakeContext gives the
// Decision, as ratelimit's Take does, with a ctx and the error.
func TestAllowNIsAYesOrNo(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l := newLimiter(t, Config{Client: b.client(t), Rate: 1e-3, Burst: 3, Prefix: b.prefix})
		ctx := context.Background()
		ok, err := l.AllowN(ctx, "k", 2)
		require.NoError(t, err)
		require.True(t, ok, "AllowN(2) of a full bucket of 3")
		ok, err = l.Allow(ctx, "k")
		require.NoError(t, err)
		require.True(t, ok, "Allow() of the third")
		ok, err = l.AllowN(ctx, "k", 1)
		require.NoError(t, err)
		require.False(t, ok, "AllowN(1) of an empty bucket")
		ok, err = l.Allow(ctx, "k")
		require.NoError(t, err)
		require.False(t, ok, "Allow() of an empty bucket")

		d, err := l.TakeContext(ctx, "k", 1)
		require.NoError(t, err)
		require.False(t, d.Allowed)
		require.Equal(t, 3, d.Limit)
		d, err = l.TakeContext(ctx, "k", 4)
		require.NoError(t, err)
		require.Equal(t, ratelimit.Never, d.RetryAfter, "more than the burst")

		done, cancel := context.WithCancel(ctx)
		cancel()
		ok, err = l.AllowN(done, "other", 1)
		require.False(t, ok)
		require.Same(t, context.Canceled, err)
		ok, err = l.Allow(done, "other")
		require.False(t, ok)
		require.Same(t, context.Canceled, err)
	})
}

// TestAllowNFollowsThePolicy: with Redis gone, AllowN answers as the Policy
// says, with an error that matches ErrUnavailable.
func TestAllowNFollowsThePolicy(t *testing.T) {
	gone := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // nothing listens
	t.Cleanup(func() { gone.Close() })
	for _, p := range []Policy{FailOpen, FailClosed, FailLocal} {
		l, err := New(Config{Client: gone, Rate: 1, Burst: 10, Policy: p})
		require.NoError(t, err)
		ok, err := l.AllowN(context.Background(), "k", 1)
		require.True(t, errors.Is(err, ErrUnavailable), "%v: err = %v", p, err)
		require.Equal(t, p != FailClosed, ok, "%v", p)
		d, err := l.TakeContext(context.Background(), "k", 1)
		require.True(t, errors.Is(err, ErrUnavailable), "%v: err = %v", p, err)
		if p == FailOpen {
			require.Equal(t, ratelimit.Unknown, d.Remaining)
		}
	}
}

// TestAllowNMisuseNamesTheMethod: a bad key or n panics with the name of
// the method called.
func TestAllowNMisuseNamesTheMethod(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { c.Close() })
	l, err := New(Config{Client: c, Rate: 1, Burst: 1})
	require.NoError(t, err)
	ctx := context.Background()
	// The empty key is a key: TestReview12EmptyKeyIsAKey.
	require.PanicsWithValue(t, "redislimit: AllowN with n = 0; n must be at least 1", func() { l.AllowN(ctx, "k", 0) })
	require.PanicsWithValue(t, "redislimit: TakeContext with n = -1; n must be at least 1", func() { l.TakeContext(ctx, "k", -1) })
}
