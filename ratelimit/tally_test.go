package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTallyCounts: the decisions of AllowN, Take and WaitN through a wrapped
// limiter, and what OnWait is told, in virtual time.
func TestTallyCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits []string
		tally := &Tally{OnWait: func(d time.Duration, err error) {
			s := d.String()
			if err != nil {
				s += " " + err.Error()
			}
			waits = append(waits, s)
		}}
		l := tally.Wrap(NewTokenBucket(1, 2))
		require.True(t, l.AllowN(1))
		require.True(t, l.Take(1).Allowed)
		require.False(t, l.AllowN(1))
		d := l.Take(1)
		require.False(t, d.Allowed)
		require.Equal(t, 2, d.Limit) // the bucket's own Decision
		require.NoError(t, l.WaitN(t.Context(), 1))
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, l.WaitN(ctx, 1), context.DeadlineExceeded)
		require.ErrorIs(t, l.WaitN(t.Context(), 3), ErrExceedsBurst)
		require.Equal(t, TallyCounts{Allowed: 2, Refused: 2, Waited: 1, WaitFailed: 2}, tally.Counts())
		require.Equal(t, []string{"1s", "0s " + ErrWouldExceedDeadline.Error(), "0s " + ErrExceedsBurst.Error()}, waits)
	})
}

// TestTallySharedByKeys: one Tally counts for every key's limiter of a
// Keyed, and wraps a Limiter that is not a Taker.
func TestTallySharedByKeys(t *testing.T) {
	var tally Tally // the zero Tally is ready
	k := NewKeyed(func(string) Taker { return tally.Wrap(NewSlidingWindow(1, time.Hour)) }, KeyedConfig{})
	for _, key := range []string{"a", "b", "a", "c", "b"} {
		k.Allow(key)
	}
	require.Equal(t, TallyCounts{Allowed: 3, Refused: 2}, tally.Counts())

	p := tally.Wrap(plainLimiter{}) // allows all, WaitN returns nil
	require.Equal(t, Decision{Allowed: true, Remaining: -1}, p.Take(1))
	require.NoError(t, p.WaitN(context.Background(), 1))
	require.Equal(t, TallyCounts{Allowed: 4, Refused: 2, Waited: 1}, tally.Counts())
}

// TestTallyConcurrent: counts add up under concurrent use, with random
// cancellation of waits.
func TestTallyConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waited atomic.Int64
		tally := &Tally{OnWait: func(time.Duration, error) { waited.Add(1) }}
		l := tally.Wrap(NewTokenBucket(100, 5))
		var wg sync.WaitGroup
		var allowed, refused, ok, failed atomic.Int64
		for g := range 8 {
			wg.Go(func() {
				for i := range 100 {
					if (g+i)%2 == 0 {
						if l.AllowN(1) {
							allowed.Add(1)
						} else {
							refused.Add(1)
						}
						continue
					}
					ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i%7)*time.Millisecond)
					if l.WaitN(ctx, 1) == nil {
						ok.Add(1)
					} else {
						failed.Add(1)
					}
					cancel()
				}
			})
		}
		wg.Wait()
		require.Equal(t, TallyCounts{Allowed: allowed.Load(), Refused: refused.Load(), Waited: ok.Load(), WaitFailed: failed.Load()}, tally.Counts())
		require.Equal(t, ok.Load()+failed.Load(), waited.Load())
	})
}

func TestTallyMisuse(t *testing.T) {
	var tally *Tally
	require.PanicsWithValue(t, errNilTally, func() { tally.Counts() })
	require.PanicsWithValue(t, errNilTally, func() { tally.Wrap(NewTokenBucket(1, 1)) })
	tally = new(Tally)
	require.PanicsWithValue(t, "ratelimit: Tally.Wrap of a nil Limiter", func() { tally.Wrap(nil) })
	require.PanicsWithValue(t, "ratelimit: Tally.Wrap of a nil Limiter", func() { tally.Wrap((*TokenBucket)(nil)) })
	// A wrapped zero TokenBucket panics as the bucket does, at first use.
	require.PanicsWithValue(t, errZeroBucket, func() { tally.Wrap(new(TokenBucket)).AllowN(1) })
	require.Zero(t, tally.Counts())
}

// TestTallyWrapsKeyedHandles: a Tally wraps the handle of one key of a
// Keyed; the handle is a Taker, so Take tells the key's bucket's Decision. A misused
// wrapper (n below 1) panics as the limiter does, and counts nothing.
func TestTallyWrapsKeyedHandles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tally Tally
		k := NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
		a, b := tally.Wrap(k.Limiter("a")), tally.Wrap(k.Limiter("b"))
		require.True(t, a.AllowN(1))
		d := a.Take(1)
		require.False(t, d.Allowed)
		require.Equal(t, 1, d.Limit) // the key's bucket's burst
		require.Equal(t, time.Second, d.RetryAfter)
		require.True(t, b.Take(1).Allowed)
		require.NoError(t, a.WaitN(t.Context(), 1))
		require.Panics(t, func() { a.AllowN(0) })
		require.Panics(t, func() { _ = b.WaitN(t.Context(), -1) })
		require.Equal(t, TallyCounts{Allowed: 2, Refused: 1, Waited: 1}, tally.Counts())
	})
}
