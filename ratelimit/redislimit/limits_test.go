package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

func TestLimitsBadConfig(t *testing.T) {
	c := backends(t)[0].client(t)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Client: c, Rate: 1, Burst: 1, Limits: []Limit{{Rate: 0, Burst: 1}}}, "Limits[0].Rate is 0"},
		{Config{Client: c, Rate: 1, Burst: 1, Limits: []Limit{{Rate: 1, Burst: 1}, {Rate: -1, Burst: 1}}}, "Limits[1].Rate is -1"},
		{Config{Client: c, Rate: 1, Burst: 1, Limits: []Limit{{Rate: math.NaN(), Burst: 1}}}, "Limits[0].Rate is NaN"},
		{Config{Client: c, Rate: 1, Burst: 1, Limits: []Limit{{Rate: math.Inf(1), Burst: 1}}}, "Limits[0].Rate is +Inf"},
		{Config{Client: c, Rate: 1, Burst: 1, Limits: []Limit{{Rate: 1e300, Burst: 0}}}, "Limits[0].Burst is 0"},
		{Config{Client: c, Rate: 1, Burst: 1, Limits: []Limit{{Rate: 1, Burst: -1}}}, "Limits[0].Burst is -1"},
		{Config{Client: c, Rate: 1, Burst: 1, Limits: []Limit{{Rate: 1e-300, Burst: 1}}}, "Limits[0]: Rate 1e-300 and Burst 1: refilling from empty would take over four years"},
		{Config{Client: c, Rate: 1, Burst: 1, Limits: []Limit{{Rate: 1, Burst: math.MaxInt}}}, "refilling from empty would take over four years"},
		{Config{Client: c, Rate: 1, Burst: 1, Policy: FailLocal, LocalShare: 0.5, Limits: []Limit{{Rate: 1e-8, Burst: 1}}},
			"LocalShare 0.5 of Rate 1e-08 (Limits[0]): the in-process bucket of FailLocal"},
	} {
		l, err := New(tc.cfg)
		require.Nil(t, l)
		require.ErrorContains(t, err, "redislimit: bad Config: ")
		require.ErrorContains(t, err, tc.want)
	}
	// Tiny and huge rates within range.
	_, err := New(Config{Client: c, Rate: 1, Burst: 1, Limits: []Limit{{Rate: 1e300, Burst: 1}, {Rate: 1e-6, Burst: 1}}})
	require.NoError(t, err)
}

// TestLimitsAllOrNothing: a call refused by one limit takes nothing from the
// others, and one allowed takes from all; the Decision is the strictest
// limit's.
func TestLimitsAllOrNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.mini != nil {
			b.mini.SetTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // no refill between calls
		}
		ctx := context.Background()
		cfg := Config{Client: b.client(t), Rate: 1e-3, Burst: 5, Prefix: b.prefix + "aon:",
			Limits: []Limit{{Rate: 1e-3, Burst: 3}, {Rate: 1e-3, Burst: 4}}}
		l := newLimiter(t, cfg)
		d, err := l.TakeContext(ctx, "k", 2)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.Equal(t, 1, d.Remaining, "the second limit has 1 left")
		require.Equal(t, 3, d.Limit)

		d, err = l.TakeContext(ctx, "k", 2)
		require.NoError(t, err)
		require.False(t, d.Allowed)
		require.Equal(t, 1, d.Remaining)
		require.Equal(t, 3, d.Limit)
		require.InDelta(t, float64(1000*time.Second), float64(d.RetryAfter), float64(time.Second), "a token of the second limit")

		// The first limit alone still has 3: the refusal took nothing.
		first := newLimiter(t, Config{Client: cfg.Client, Rate: cfg.Rate, Burst: cfg.Burst, Prefix: cfg.Prefix})
		ok, err := first.AllowN(ctx, "k", 3)
		require.NoError(t, err)
		require.True(t, ok)
		ok, _ = first.AllowN(ctx, "k", 1)
		require.False(t, ok)

		// The third has 2 left, in its own key.
		third, err := cfg.Client.Get(ctx, l.Key("k")+":3").Result()
		require.NoError(t, err)
		require.NotEmpty(t, third)

		// More than the least burst: never, whatever is left.
		d, err = l.TakeContext(ctx, "fresh", 4)
		require.NoError(t, err)
		require.False(t, d.Allowed)
		require.Equal(t, ratelimit.Never, d.RetryAfter)
		require.Equal(t, 3, d.Remaining)
		require.ErrorIs(t, l.WaitN(ctx, "fresh", 4), ratelimit.ErrExceedsBurst)
		d, err = l.TakeContext(ctx, "fresh", math.MaxInt)
		require.NoError(t, err)
		require.False(t, d.Allowed)
		ok, err = l.AllowN(ctx, "fresh", 3)
		require.NoError(t, err)
		require.True(t, ok, "the refusals took nothing")

		// Reset forgets every limit of the key.
		require.NoError(t, l.Reset(ctx, "k"))
		n, err := cfg.Client.Exists(ctx, l.Key("k"), l.Key("k")+":2", l.Key("k")+":3").Result()
		require.NoError(t, err)
		require.Zero(t, n)
		ok, _ = l.AllowN(ctx, "k", 3)
		require.True(t, ok)
	})
}

// TestLimitsRefill: the slowest limit decides when a waiter goes.
func TestLimitsRefill(t *testing.T) {
	m := backends(t)[0]
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	m.mini.SetTime(at)
	l := newLimiter(t, Config{Client: m.client(t), Rate: 10, Burst: 2, Limits: []Limit{{Rate: 1, Burst: 3}}})
	ctx := context.Background()
	ok, _ := l.AllowN(ctx, "k", 2)
	require.True(t, ok)
	m.mini.SetTime(at.Add(200 * time.Millisecond)) // the first is full again, the second has 1
	d, err := l.TakeContext(ctx, "k", 2)
	require.NoError(t, err)
	require.False(t, d.Allowed)
	require.Equal(t, 800*time.Millisecond, d.RetryAfter)
	require.Equal(t, 1, d.Remaining)
	require.Equal(t, 1800*time.Millisecond, d.ResetAfter, "until the second is full")
	m.mini.SetTime(at.Add(time.Second))
	ok, _ = l.AllowN(ctx, "k", 2)
	require.True(t, ok)
}

// TestLimitsOneRoundTrip: several limits cost one round trip per call, alone
// or in a pipeline, and a script Redis forgot is sent again.
func TestLimitsOneRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, rt := range []int{1, NoLimit} {
			c := redis.NewClient(&redis.Options{Addr: b.addr, MaxRetries: -1})
			t.Cleanup(func() { _ = c.Close() })
			f := countInFlight(c)
			l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 100, MaxRoundTrips: rt, Prefix: b.prefix + "rt" + strconv.Itoa(rt) + ":",
				Limits: []Limit{{Rate: 1e-3, Burst: 50}, {Rate: 1e-3, Burst: 70}}})
			ctx := context.Background()
			_, _ = l.AllowN(ctx, "warm", 1) // the client's handshake
			before := f.total.Load()
			ok, err := l.AllowN(ctx, "k", 1)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, int64(1), f.total.Load()-before, "one round trip")
			require.NoError(t, c.ScriptFlush(ctx).Err())
			// Many at once: pipelines, with the script sent again.
			errs := make(chan error, 60)
			for range 60 {
				go func() {
					_, err := l.AllowN(ctx, "k", 1)
					errs <- err
				}()
			}
			for range 60 {
				require.NoError(t, <-errs)
			}
			ok, _ = l.AllowN(ctx, "k", 1)
			require.False(t, ok, "the second limit's 50 are taken")
			require.Zero(t, l.Failures())
		}
	})
}

// TestLimitsFailLocal: while Redis is down, the in-process buckets of every
// limit decide, all or nothing.
func TestLimitsFailLocal(t *testing.T) {
	l := newLimiter(t, Config{
		Client: backend{addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}.client(t), Rate: 1e-3, Burst: 4,
		Timeout: 50 * time.Millisecond, Policy: FailLocal, LocalShare: 0.5,
		Limits: []Limit{{Rate: 1e-3, Burst: 6}},
	})
	ctx := context.Background()
	for i, want := range []bool{true, true, false} { // half of a burst of 4
		ok, err := l.AllowN(ctx, "k", 1)
		require.ErrorIs(t, err, ErrUnavailable)
		require.Equal(t, want, ok, "call %d", i)
	}
	// The second limit's local share is 3: the refusal above took nothing
	// from it, so a third event is there once the first's is.
	d, err := l.TakeContext(ctx, "k", 1)
	require.ErrorIs(t, err, ErrUnavailable)
	require.False(t, d.Allowed)
	require.Equal(t, 0, d.Remaining)
	require.Equal(t, 2, d.Limit)
}

// TestHammerLimits: calls cancelled at random never break any of the
// limits, and leave no round trip or queued call behind.
func TestHammerLimits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, rt := range []int{1, NoLimit} {
			t.Run(fmt.Sprintf("MaxRoundTrips=%d", rt), func(t *testing.T) {
				c := redis.NewClient(&redis.Options{Addr: b.addr, MaxRetries: -1})
				t.Cleanup(func() { _ = c.Close() })
				// miniredis's clock stands still: nothing refills.
				rate, burst, rate2, burst2 := 2000.0, 20, 500.0, 25
				if b.mini != nil {
					rate, rate2 = 1e-3, 1e-3
				}
				l := newLimiter(t, Config{Client: c, Rate: rate, Burst: burst, MaxRoundTrips: rt, Policy: FailClosed,
					Limits: []Limit{{Rate: rate2, Burst: burst2}}, Prefix: fmt.Sprintf("%shl%d:", b.prefix, rt)})
				start := time.Now()
				granted := hammer(t, l, 200*time.Millisecond)
				elapsed := time.Since(start).Seconds()
				require.Positive(t, granted)
				for _, lim := range []struct {
					rate  float64
					burst int
				}{{rate, burst}, {rate2, burst2}} {
					bound := float64(lim.burst)
					if b.mini == nil {
						bound += lim.rate * elapsed
					}
					require.LessOrEqual(t, float64(granted), bound)
				}
				require.Eventually(t, func() bool { return l.underway() == 0 }, 5*time.Second, time.Millisecond)
				require.Zero(t, l.queued())
			})
		}
	})
}

// A script that answers with the wrong number of values, or signs that
// disagree, is a failure of Redis: the Policy decides.
func TestLimitsBadReply(t *testing.T) {
	l := &Limiter{more: []limit{{}}}
	_, err := l.decodeAll([]int64{1}, 1)
	require.ErrorContains(t, err, "redislimit: the script returned 1 values for 2 limits")
	_, err = l.decodeAll([]int64{1, -2}, 1)
	require.True(t, err != nil && !errors.Is(err, ErrUnavailable))
}
