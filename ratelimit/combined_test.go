package ratelimit

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestAllMisuse(t *testing.T) {
	tb := NewTokenBucket(1, 1)
	var nilBucket *TokenBucket
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"none", func() { All() }, "ratelimit: All with no limiters"},
		{"nil", func() { All(tb, nil) }, "ratelimit: All with a nil limiter (argument 1)"},
		{"typed nil", func() { All(nilBucket) }, "ratelimit: All with a nil limiter (argument 0)"},
		{"zero bucket", func() { All(new(TokenBucket)) }, errZeroBucket},
		{"zero window", func() { All(new(SlidingWindow)) }, errZeroWindow},
		{"zero counter", func() { All(new(SlidingWindowCounter)) }, errZeroCounter},
		{"zero combined", func() { All(new(Combined)) }, errZeroCombined},
		{"foreign", func() { All(new(Tally).Wrap(tb)) },
			"ratelimit: All of a *ratelimit.tallied; only this package's *TokenBucket, *SlidingWindow, *SlidingWindowCounter and *Combined can give events back exactly"},
		{"twice", func() { All(tb, tb) }, "ratelimit: All with the same *ratelimit.TokenBucket twice; it would take n from it twice"},
		{"twice nested", func() { All(All(tb), tb) }, "ratelimit: All with the same *ratelimit.TokenBucket twice; it would take n from it twice"},
		{"AllowN 0", func() { All(tb).AllowN(0) }, "ratelimit: Combined.AllowN with n = 0; n must be at least 1"},
		{"AllowN -1", func() { All(tb).AllowN(-1) }, "ratelimit: Combined.AllowN with n = -1; n must be at least 1"},
		{"Take 0", func() { All(tb).Take(0) }, "ratelimit: Combined.Take with n = 0; n must be at least 1"},
		{"WaitN 0", func() { _ = All(tb).WaitN(t.Context(), 0) }, "ratelimit: Combined.WaitN with n = 0; n must be at least 1"},
		{"zero Allow", func() { new(Combined).Allow() }, errZeroCombined},
		{"zero Take", func() { new(Combined).Take(1) }, errZeroCombined},
		{"zero Wait, done ctx", func() { _ = new(Combined).Wait(testutil.Cancelled()) }, errZeroCombined},
	} {
		t.Run(c.name, func(t *testing.T) { assert.PanicsWithValue(t, c.want, c.f) })
	}
}

// A refused AllowN takes nothing from the limiters that had room: each is
// left exactly as it was.
func TestCombinedAllOrNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTokenBucket(1, 5)
		sw := NewSlidingWindow(3, time.Minute)
		sc := NewSlidingWindowCounter(4, time.Minute)
		c := All(tb, sw, sc)
		require.True(t, c.AllowN(2))
		require.False(t, c.AllowN(2), "the window has 1 left")
		assert.Equal(t, 3.0, tb.Tokens(), "the bucket gave back what it took")
		assert.Equal(t, 1, sc.Take(1).Remaining, "the counter gave back what it took: 4-2 before this take")
		require.True(t, sw.Allow())
		require.False(t, sw.Allow())
		// The window is full: the others keep what they have.
		require.False(t, c.Allow())
		assert.Equal(t, 3.0, tb.Tokens())
		assert.Equal(t, 0, sc.Take(1).Remaining, "the counter had 1 left")
	})
}

func TestCombinedArgumentExtremes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := All(NewTokenBucket(math.Inf(1), 10), NewSlidingWindow(1, math.MaxInt64), NewSlidingWindowCounter(math.MaxInt, math.MaxInt64))
		assert.False(t, c.AllowN(2))
		assert.False(t, c.AllowN(math.MaxInt))
		assert.Equal(t, Never, c.Take(math.MaxInt).RetryAfter)
		assert.ErrorIs(t, c.WaitN(t.Context(), math.MaxInt), ErrExceedsBurst)
		assert.True(t, c.Allow())
		// The window never empties: no wait would do.
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(math.MaxInt64))
		defer cancel()
		assert.ErrorIs(t, c.Wait(ctx), ErrWouldExceedDeadline)
		d := c.Take(1)
		assert.False(t, d.Allowed)
		assert.Equal(t, 0, d.Remaining)
		assert.Equal(t, 1, d.Limit)
		assert.Equal(t, time.Duration(math.MaxInt64), d.RetryAfter)
	})
}

// WaitN waits for the slowest limiter, then takes from all at once, and
// holds nothing while it waits.
func TestCombinedWaitForSlowest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTokenBucket(10, 2) // a token every 100 ms
		sw := NewSlidingWindow(2, time.Second)
		c := All(tb, sw)
		require.True(t, c.AllowN(2))
		start := time.Now()
		done := make(chan error)
		go func() { done <- c.WaitN(t.Context(), 2) }()
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		// The bucket is full again, and the waiter holds none of it.
		assert.Equal(t, 2.0, tb.Tokens())
		require.True(t, tb.Allow())
		require.NoError(t, <-done)
		assert.Equal(t, time.Second, time.Since(start))
		assert.False(t, sw.Allow())
	})
}

func TestCombinedFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := All(NewTokenBucket(1, 3), NewSlidingWindow(3, 10*time.Second))
		require.True(t, c.AllowN(3))
		var order []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, n := range []int{3, 1, 2} {
			wg.Go(func() {
				require.NoError(t, c.WaitN(t.Context(), n))
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
			synctest.Wait()
		}
		// A newcomer does not overtake the waiters.
		assert.False(t, c.Allow())
		wg.Wait()
		assert.Equal(t, []int{0, 1, 2}, order)
	})
}

func TestCombinedWaitFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTokenBucket(1, 2)
		c := All(tb, NewSlidingWindowCounter(5, time.Hour))
		// A done ctx fails although the events are there.
		assert.Equal(t, context.Canceled, c.Wait(testutil.Cancelled()))
		assert.Equal(t, 2.0, tb.Tokens())
		require.True(t, c.AllowN(2))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- c.WaitN(ctx, 2) }()
		synctest.Wait()
		cancel()
		assert.Equal(t, context.Canceled, <-done)
		// The waiter took nothing: after two seconds, the bucket is full.
		time.Sleep(2 * time.Second)
		assert.Equal(t, 2.0, tb.Tokens())
		// A deadline before the bucket could refill fails at once.
		require.True(t, c.AllowN(2))
		ctx, cancel = context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		assert.ErrorIs(t, c.WaitN(ctx, 2), ErrWouldExceedDeadline)
		assert.Zero(t, time.Since(start))
	})
}

// A member's SetBurst below n turns the Combined's waiter away.
func TestCombinedSetBurstWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTokenBucket(1, 3)
		c := All(tb, NewSlidingWindow(10, time.Minute))
		require.True(t, c.AllowN(3))
		done := make(chan error)
		go func() { done <- c.WaitN(t.Context(), 3) }()
		synctest.Wait()
		tb.SetBurst(2)
		assert.ErrorIs(t, <-done, ErrExceedsBurst)
	})
}

// A Combined's refund wakes the head of a member's own queue, which would
// otherwise sleep until the tokens it counted on came by refill.
func TestCombinedRefundWakesMemberWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTokenBucket(1, 2)
		sw := NewSlidingWindow(1, time.Hour)
		c := All(tb, sw)
		require.True(t, tb.AllowN(2))
		time.Sleep(time.Second) // one token back
		start := time.Now()
		done := make(chan error)
		go func() { done <- tb.WaitN(t.Context(), 2) }()
		synctest.Wait()
		require.True(t, sw.Allow())
		assert.False(t, c.Allow(), "the bucket's waiter goes first")
		require.NoError(t, <-done)
		assert.Equal(t, time.Second, time.Since(start))
	})
}

func TestCombinedNested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b, x := NewTokenBucket(1, 2), NewSlidingWindow(2, time.Minute), NewTokenBucket(1, 5)
		inner := All(a, b)
		outer := All(inner, x)
		require.True(t, outer.AllowN(2))
		assert.False(t, inner.Allow())
		assert.Equal(t, 3.0, x.Tokens())
		// The outer waits behind the inner's waiters.
		done := make(chan error)
		go func() { done <- inner.WaitN(t.Context(), 1) }()
		synctest.Wait()
		time.Sleep(time.Minute)
		assert.False(t, outer.AllowN(2), "the inner's waiter goes first")
		require.NoError(t, <-done)
		assert.True(t, outer.Allow())
	})
}

func TestKeyedCombined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := NewKeyed(func(string) *Combined {
			return All(NewTokenBucket(1, 2), NewSlidingWindow(3, time.Minute))
		}, KeyedConfig{})
		assert.True(t, k.AllowN("a", 2))
		assert.False(t, k.Allow("a"))
		assert.True(t, k.Allow("b"))
		d := k.Take("a", 1)
		assert.False(t, d.Allowed)
		assert.Equal(t, time.Second, d.RetryAfter)
		require.NoError(t, k.WaitN(t.Context(), "a", 1))
		time.Sleep(2 * time.Second)
		assert.False(t, k.AllowN("a", 2), "the window has 0 left")
		h := k.Limiter("a")
		assert.ErrorIs(t, h.WaitN(t.Context(), 3), ErrExceedsBurst)
	})
}

func TestCombinedTallyTransportMiddleware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tally Tally
		c := All(NewTokenBucket(1, 2), NewSlidingWindow(3, time.Minute))
		l := tally.Wrap(c)
		assert.True(t, l.AllowN(2))
		assert.False(t, l.AllowN(1))
		assert.Equal(t, TallyCounts{Allowed: 1, Refused: 1}, tally.Counts())

		srv := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
		h := Middleware(Global(All(NewTokenBucket(1, 1), NewSlidingWindow(5, time.Minute))), MiddlewareConfig{})(srv)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		assert.Equal(t, http.StatusOK, rec.Code)
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		assert.Equal(t, http.StatusTooManyRequests, rec.Code)
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))

		rt := &Transport{Limiter: c, Base: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
		})}
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://x/", nil)
		start := time.Now()
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, time.Second, time.Since(start))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = rt.RoundTrip(req.WithContext(ctx))
		var de *DeadlineError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, 59*time.Second, de.Delay, "the window's oldest two leave at a minute")
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Made outside a bubble, a Combined works inside one, and one made inside
// keeps working after it.
func TestCombinedAcrossBubbles(t *testing.T) {
	outside := All(NewTokenBucket(1, 2), NewSlidingWindow(2, time.Second))
	require.True(t, outside.Allow())
	var inside *Combined
	synctest.Test(t, func(t *testing.T) {
		assert.True(t, outside.AllowN(2))
		require.NoError(t, outside.WaitN(t.Context(), 1))
		inside = All(NewTokenBucket(1, 2), NewSlidingWindow(2, time.Second))
		assert.True(t, inside.AllowN(2))
		assert.False(t, inside.Allow())
	})
	assert.True(t, inside.AllowN(2))
	assert.False(t, inside.Allow())
	assert.Equal(t, context.Canceled, inside.Wait(testutil.Cancelled()))
}

// TestCombinedGrantAsCtxEnds: the events come at the instant the waiter's
// ctx ends. Either it is granted and took from every limiter, or it failed
// and took from none; the waiter behind it is served either way. On one
// processor the order of the two is left to the scheduler, so the test
// repeats.
func TestCombinedGrantAsCtxEnds(t *testing.T) {
	testutil.OneProcessor(t)
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			tb := NewTokenBucket(1, 2)
			sw := NewSlidingWindow(2, time.Second)
			c := All(tb, sw)
			require.True(t, c.AllowN(2))
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(2*time.Second, cancel) // when the bucket has 2 again
			first := make(chan error)
			go func() { first <- c.WaitN(ctx, 2) }()
			synctest.Wait()
			second := make(chan error)
			go func() { second <- c.WaitN(t.Context(), 1) }()
			synctest.Wait()
			start := time.Now()
			err := <-first
			require.NoError(t, <-second)
			if err == nil {
				// Granted at 2 s; the second waited for a token more.
				require.Equal(t, 3*time.Second, time.Since(start))
				assert.Equal(t, 0.0, tb.Tokens())
			} else {
				require.Equal(t, context.Canceled, err)
				require.Equal(t, 2*time.Second, time.Since(start))
				assert.Equal(t, 1.0, tb.Tokens(), "the cancelled waiter took nothing")
			}
		})
	}
}

// A member's SetRate while a Combined waits: the waiter is served at the new
// rate, at the latest once the wait it computed before ends.
func TestCombinedSetRateWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := NewTokenBucket(1, 1)
		c := All(tb, NewSlidingWindowCounter(10, time.Hour))
		require.True(t, c.Allow())
		done := make(chan error)
		start := time.Now()
		go func() { done <- c.Wait(t.Context()) }()
		synctest.Wait()
		tb.SetRate(0.5) // slower: the waiter, woken at 1 s, sleeps on
		require.NoError(t, <-done)
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}

// Each kind of limiter gives back exactly when it comes first and a later
// one refuses.
func TestCombinedRefundEachKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := NewSlidingWindowCounter(4, time.Minute)
		sw := NewSlidingWindow(4, time.Minute)
		empty := NewTokenBucket(1e-3, 1)
		require.True(t, empty.Allow())
		c := All(sc, sw, empty)
		for range 3 {
			require.False(t, c.AllowN(3))
		}
		assert.True(t, sc.AllowN(4), "the counter gave back each time")
		assert.True(t, sw.AllowN(4), "the window gave back each time")
		// A counter whose previous fixed window still weighs gives back too.
		sc2 := NewSlidingWindowCounter(4, time.Second)
		tb := NewTokenBucket(1, 1)
		c2 := All(sc2, tb)
		require.True(t, c2.Allow())
		time.Sleep(1500 * time.Millisecond)
		require.True(t, tb.Allow())
		require.False(t, c2.Allow())
		// Half of the previous window's one event counts: 3 more fit, not 4.
		assert.True(t, sc2.AllowN(3))
		assert.False(t, sc2.Allow())
	})
}
