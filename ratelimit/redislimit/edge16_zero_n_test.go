package redislimit

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// TestEdge16ZeroEvents: a count of events below 1 is a bug at every rate,
// for every method of a Limiter and of its Handles that takes one: it
// panics naming the method, before any round trip, even with a ctx already
// done. A Rate of +Inf is refused by New, as Config.Rate says (a
// ratelimit.TokenBucket takes it: a limit shared through Redis does not).
func TestEdge16ZeroEvents(t *testing.T) {
	c := backends(t)[0].client(t)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, rate := range []float64{1e-8, 1, 1e6} {
		l, err := New(Config{Client: c, Rate: rate, Burst: 1, Prefix: fmt.Sprintf("edge16:%v:", rate)})
		require.NoError(t, err)
		h := l.For("k")
		for _, n := range []int{0, -1, math.MinInt} {
			msg := func(method string) string {
				return fmt.Sprintf("redislimit: %s with n = %d; n must be at least 1", method, n)
			}
			for _, ctx := range []context.Context{context.Background(), done} {
				require.PanicsWithValue(t, msg("TakeContext"), func() { _, _ = l.TakeContext(ctx, "k", n) })
				require.PanicsWithValue(t, msg("AllowN"), func() { _, _ = l.AllowN(ctx, "k", n) })
				require.PanicsWithValue(t, msg("WaitN"), func() { _ = l.WaitN(ctx, "k", n) })
				require.PanicsWithValue(t, msg("Handle.TakeContext"), func() { _, _ = h.TakeContext(ctx, n) })
				require.PanicsWithValue(t, msg("Handle.WaitN"), func() { _ = h.WaitN(ctx, n) })
			}
			require.PanicsWithValue(t, msg("Take"), func() { l.Take("k", n) })
			require.PanicsWithValue(t, msg("Handle.AllowN"), func() { h.AllowN(n) })
			require.PanicsWithValue(t, msg("Handle.Take"), func() { h.Take(n) })
		}
		// Nothing was taken: the one event of the burst is there.
		require.True(t, h.AllowN(1), "rate %v", rate)
	}
	for _, rate := range []float64{math.Inf(1), 0, math.NaN()} {
		_, err := New(Config{Client: c, Rate: rate, Burst: 1})
		require.ErrorContains(t, err, "it must be above 0 and finite", "%v", rate)
		_, err = New(Config{Client: c, Rate: 1, Burst: 1, Limits: []Limit{{Rate: rate, Burst: 1}}})
		require.ErrorContains(t, err, "it must be above 0 and finite", "%v", rate)
	}
}

// A Handle is a ratelimit.Limiter, whose doc says n must be at least 1.
var _ ratelimit.Limiter = (*Handle)(nil)
