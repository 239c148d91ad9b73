package ratelimit

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// The tests of this file pin what the limiters do at the edges of their
// arguments: rates too slow for the clock or faster than it, windows and
// times longer than it counts, counts near math.MaxInt.

// TestTokenBucketTinyRateRefused: a rate so slow that 1e9/rate does not fit in
// an int64 once overflowed into a negative cost, which passed the "over four
// years" check and let every event through. Each way of setting a rate or a
// burst now refuses it, checked on floats before any conversion, and leaves
// the bucket as it was.
func TestTokenBucketTinyRateRefused(t *testing.T) {
	const msg = "refilling would take over four years"
	for _, rate := range []float64{1e-9, 1.09e-10, 1.08e-10, 1e-11, 1e-300, math.SmallestNonzeroFloat64} {
		require.PanicsWithValue(t, panicText("NewTokenBucket", rate, 1, msg), func() { NewTokenBucket(rate, 1) }, "rate %v", rate)
		b := NewTokenBucket(1, 2)
		require.PanicsWithValue(t, panicText("TokenBucket.SetRate", rate, 2, msg), func() { b.SetRate(rate) }, "rate %v", rate)
		require.Equal(t, 1.0, b.Rate())
		require.True(t, b.AllowN(2), "SetRate's panic changed the bucket")
		require.False(t, b.Allow())
		require.Error(t, ValidateTokenBucket(rate, 1), "rate %v", rate)
	}
	b := NewTokenBucket(1, 1)
	require.PanicsWithValue(t, panicText("TokenBucket.SetBurst", 1.0, math.MaxInt, msg), func() { b.SetBurst(math.MaxInt) })
	require.Equal(t, 1, b.Burst())
	k := newBuckets(1e-11, 1, KeyedConfig{})
	require.PanicsWithValue(t, panicText("NewTokenBucket", 1e-11, 1, msg), func() { k.Allow("a") })
	require.Zero(t, k.Len())
	require.True(t, newBuckets(1, 1, KeyedConfig{}).Allow("a"))

	// The slowest rates allowed still refuse as they should.
	slow := NewTokenBucket(1e-8, 1) // a token every 3 years
	require.True(t, slow.Allow())
	for range 1000 {
		require.False(t, slow.Allow())
	}
}

func panicText(fn string, rate float64, burst int, why string) string {
	return fmt.Sprintf("ratelimit: %s with rate %v and burst %d: %s", fn, rate, burst, why)
}

// TestValidateTokenBucket: what NewTokenBucket would panic about, as an error.
func TestValidateTokenBucket(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		burst int
		ok    bool
	}{
		{1, 1, true}, {math.Inf(1), math.MaxInt, true}, {1e300, 1, true}, {1e-8, 1, true},
		{0, 1, false}, {-1, 1, false}, {math.NaN(), 1, false}, {math.Inf(-1), 1, false},
		{1, 0, false}, {1, -1, false}, {1, math.MaxInt, false}, {1e-300, 1, false},
	} {
		err := ValidateTokenBucket(tc.rate, tc.burst)
		if tc.ok {
			require.NoError(t, err, "rate %v, burst %d", tc.rate, tc.burst)
			NewTokenBucket(tc.rate, tc.burst)
			continue
		}
		require.Error(t, err, "rate %v, burst %d", tc.rate, tc.burst)
		require.PanicsWithValue(t, "ratelimit: NewTokenBucket with "+err.Error()[len("ratelimit: "):],
			func() { NewTokenBucket(tc.rate, tc.burst) })
	}
}

// TestTokenBucketRateAboveClock: a rate above one token a nanosecond is kept
// at one a nanosecond, as documented; Rate still says what was asked.
func TestTokenBucketRateAboveClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, rate := range []float64{2e9, 1e300, math.MaxFloat64} {
			b := NewTokenBucket(rate, 10)
			require.Equal(t, rate, b.Rate())
			require.True(t, b.AllowN(10))
			require.False(t, b.Allow())
			time.Sleep(time.Nanosecond)
			require.True(t, b.Allow())
			require.False(t, b.Allow())
		}
	})
}

// TestSlidingWindowHugeWindow: a window longer than about 146 years reached
// past the time the windows took for "never": outside a bubble a fresh
// limiter refused its first event, and inside one now-window wrapped around
// and every event passed. Sums of times now saturate, so that such a window
// allows limit events and then none, as a window longer than the process
// lives should.
func TestSlidingWindowHugeWindow(t *testing.T) {
	const year = 365 * 24 * time.Hour
	for _, k := range windowKinds {
		for _, window := range []time.Duration{147 * year, 200 * year, math.MaxInt64 - 1, math.MaxInt64} {
			check := func(t *testing.T) {
				w := k.new(2, window)
				require.True(t, w.Allow(), "first event")
				d := w.Take(1)
				require.True(t, d.Allowed, "second event")
				require.Equal(t, 0, d.Remaining)
				require.Equal(t, window, d.Window)
				require.Positive(t, d.ResetAfter)
				d = w.Take(1)
				require.False(t, d.Allowed, "third event")
				require.Positive(t, d.RetryAfter)
				require.Positive(t, d.ResetAfter)
				require.Equal(t, time.Duration(-1), w.Take(3).RetryAfter)

				ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
				defer cancel()
				require.ErrorIs(t, w.Wait(ctx), ErrWouldExceedDeadline)
				ctx, cancel = context.WithCancel(t.Context())
				done := make(chan error)
				go func() { done <- w.Wait(ctx) }()
				cancel()
				require.ErrorIs(t, <-done, context.Canceled)
				require.False(t, w.Allow())
			}
			t.Run(k.name+"/"+window.String()+"/outside", check)
			t.Run(k.name+"/"+window.String()+"/bubble", func(t *testing.T) { synctest.Test(t, check) })
		}
	}
}

// TestSlidingWindowHugeWindowWaiter: the head waiter of a huge window, whose
// wait saturates, is served when its ctx has no deadline only by the window
// passing: it sleeps, and leaves when its ctx ends.
func TestSlidingWindowHugeWindowWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, k := range windowKinds {
			w := k.new(1, math.MaxInt64)
			require.True(t, w.Allow())
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error)
			go func() { done <- w.Wait(ctx) }()
			synctest.Wait()
			time.Sleep(100 * 365 * 24 * time.Hour)
			select {
			case err := <-done:
				t.Fatalf("%s: Wait = %v after a century, want it waiting", k.name, err)
			default:
			}
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
		}
	})
}

// TestTokenBucketClockExtremes: times beyond what the bucket's state holds
// (an AllowNAt of the zero Time or of a time centuries ahead, a bubble that
// slept for a century and a half) wrapped around and gave out tokens without
// end. The bucket's time now stops at the bounds: it gives out its burst and
// then refuses.
func TestTokenBucketClockExtremes(t *testing.T) {
	const year = 365 * 24 * time.Hour
	for _, at := range []time.Time{{}, time.Now().Add(-200 * year), time.Now().Add(200 * year), time.Unix(1<<62, 0)} {
		b := NewTokenBucket(1, 2)
		require.True(t, b.AllowNAt(2, at), "at %v", at)
		for range 3 {
			require.False(t, b.AllowNAt(1, at), "at %v", at)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(150 * year)
		b := NewTokenBucket(1, 2)
		require.True(t, b.AllowN(2))
		require.False(t, b.Allow())
		d := b.Take(1)
		require.False(t, d.Allowed)
		require.Positive(t, d.RetryAfter)
		require.LessOrEqual(t, b.Tokens(), 0.0)
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		require.ErrorIs(t, b.Wait(ctx), context.DeadlineExceeded)

		// A waiter has no time to wake at: it waits for its ctx, without a
		// timer that would fire at the end of the bubble's time, and again.
		b.w.q.Lock()
		ok, wait := (*bucketWaitable)(b).takeLocked(1, nowNs())
		b.w.q.Unlock()
		require.False(t, ok)
		require.Equal(t, int64(math.MaxInt64), wait)
		ctx, cancel = context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- b.Wait(ctx) }()
		synctest.Wait()
		cancel()
		require.Equal(t, context.Canceled, <-done)
	})
}

// TestSlidingWindowCounterHugeLimit: near math.MaxInt the float estimate
// rounds, and the count of the current window overflowed into a negative one
// that let everything pass; Remaining came out as 0 for want of a range
// check.
func TestSlidingWindowCounterHugeLimit(t *testing.T) {
	c := NewSlidingWindowCounter(math.MaxInt, time.Hour)
	require.Equal(t, math.MaxInt-1, c.Take(1).Remaining)
	require.True(t, c.AllowN(math.MaxInt/2+1))
	require.False(t, c.AllowN(math.MaxInt/2+1))
	require.True(t, c.AllowN(math.MaxInt/2-1))
	require.False(t, c.AllowN(1))
	require.Equal(t, 0, c.Take(1).Remaining)
}

// TestSlidingWindowHugeLimit: a limit above the most a SlidingWindow keeps
// the times of is refused with a message that says so.
func TestSlidingWindowHugeLimit(t *testing.T) {
	for _, limit := range []int{1<<40 + 1, math.MaxInt} {
		require.PanicsWithValue(t, fmt.Sprintf("ratelimit: NewSlidingWindow with limit %d; above %d, it could not keep the times of its events: use SlidingWindowCounter", limit, 1<<40),
			func() { NewSlidingWindow(limit, time.Second) })
	}
}

// TestSlidingWindowMemoryFollowsUse: NewSlidingWindow accepted a limit of
// 2^40 and then allocated all its times at once, 8 TiB: the process died of
// out of memory, which no recover catches. Its memory now follows the
// events it keeps: the grants of one call, or one instant, take one run,
// and those that leave the window are forgotten, the ring shrinking again.
func TestSlidingWindowMemoryFollowsUse(t *testing.T) {
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	synctest.Test(t, func(t *testing.T) {
		var s *SlidingWindow
		require.Less(t, allocated(func() { s = NewSlidingWindow(maxWindowLimit, time.Second) }), uint64(1<<20))
		require.Less(t, allocated(func() {
			require.True(t, s.AllowN(maxWindowLimit/2))
			require.True(t, s.AllowN(maxWindowLimit/2))
			require.False(t, s.Allow())
		}), uint64(1<<20))
		require.Equal(t, 0, s.Take(1).Remaining)
		time.Sleep(time.Second)
		require.True(t, s.AllowN(maxWindowLimit))

		// A thousand grants at a thousand instants, then one after they
		// left the window: the ring grows to hold them, then shrinks.
		s = NewSlidingWindow(1000, time.Second)
		for range 1000 {
			require.True(t, s.Allow())
			time.Sleep(time.Millisecond / 2)
		}
		require.False(t, s.Allow())
		require.GreaterOrEqual(t, len(s.runs), 1000)
		time.Sleep(time.Second)
		require.True(t, s.Allow())
		require.LessOrEqual(t, len(s.runs), minRuns)
		require.Equal(t, 998, s.Take(1).Remaining) // after this one too
	})
}

// TestTokenBucketSetKeepsWholeTokens: SetBurst and SetRate carried the tokens
// through a float, which above 2^53 ns of credit (104 days) could round off
// the nanosecond that makes the last token whole: a bucket of 9 tokens kept
// 8.
func TestTokenBucketSetKeepsWholeTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(7.452e-07, 9) // a token every 15 days
		b.SetBurst(33)
		require.True(t, b.AllowN(9), "the 9 tokens stay")
		require.False(t, b.Allow())
		b = NewTokenBucket(7.452e-07, 9)
		b.SetRate(7.452e-07 * 3)
		require.True(t, b.AllowN(9), "the 9 tokens stay")
		require.False(t, b.Allow())
	})
}

// TestHugeN: n of math.MaxInt is refused, by AllowN, Take (RetryAfter -1:
// never) and WaitN (ErrExceedsBurst), without overflowing what the limiter
// keeps: it allows its limit afterwards.
func TestHugeN(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := newBuckets(1, 3, KeyedConfig{})
		for name, l := range map[string]waitLimiter{
			"TokenBucket": NewTokenBucket(1, 3), "SlidingWindow": NewSlidingWindow(3, time.Second),
			"SlidingWindowCounter": NewSlidingWindowCounter(3, time.Second),
			"Keyed":                keyedTaker{k, "a"},
		} {
			require.False(t, l.AllowN(math.MaxInt), name)
			d := l.Take(math.MaxInt)
			require.False(t, d.Allowed, name)
			require.Equal(t, time.Duration(-1), d.RetryAfter, name)
			require.Equal(t, ErrExceedsBurst, l.WaitN(t.Context(), math.MaxInt), name)
			require.True(t, l.AllowN(3), name)
		}
	})
}

// keyedTaker is a key of a Keyed as a waitLimiter.
type keyedTaker struct {
	k   *Keyed[string, *TokenBucket]
	key string
}

func (h keyedTaker) AllowN(n int) bool                      { return h.k.AllowN(h.key, n) }
func (h keyedTaker) WaitN(ctx context.Context, n int) error { return h.k.WaitN(ctx, h.key, n) }
func (h keyedTaker) Take(n int) Decision                    { return h.k.Take(h.key, n) }
