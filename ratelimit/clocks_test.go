package ratelimit

// The tests of this file pin how the limiters cross between the real clock
// and synctest bubbles' clocks, which run decades apart.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAcrossClocksFromBubble: limiters made and used up in a synctest bubble
// keep working after it, on the real clock, which reads decades later.
func TestAcrossClocksFromBubble(t *testing.T) {
	var b *TokenBucket
	var s *SlidingWindow
	var c *SlidingWindowCounter
	var k *Keyed[string, *TokenBucket]
	synctest.Test(t, func(t *testing.T) {
		b, s, c = NewTokenBucket(1, 2), NewSlidingWindow(2, time.Minute), NewSlidingWindowCounter(2, time.Minute)
		k = newBuckets(1, 2, KeyedConfig{MaxKeys: 1})
		for _, l := range []Limiter{b, s, c, k.Limiter("a")} {
			require.True(t, l.AllowN(2))
			require.False(t, l.AllowN(1))
		}
	})
	for _, l := range []Limiter{b, s, c, k.Limiter("a")} {
		require.True(t, l.AllowN(2), "%T", l)
		require.False(t, l.AllowN(1), "%T", l)
	}
	require.True(t, k.Allow("b"), "the key of the bubble makes room")
}

// TestKeyedEvictsKeysOfAnotherClock: a key last used outside a bubble looks
// used decades after the bubble's now: it was never idle there, and the last
// to go when a shard is full. It is taken for idle.
func TestKeyedEvictsKeysOfAnotherClock(t *testing.T) {
	k := newBuckets(1, 1, KeyedConfig{})
	require.True(t, k.Allow("old"))
	synctest.Test(t, func(t *testing.T) {
		// Enough new keys that several land in the shard of "old", each
		// looking at every key there (a shard holds few).
		for i := range 10 * keyedShards {
			k.Allow(fmt.Sprint(i))
		}
		held := false
		for i := range k.shards {
			s := &k.shards[i]
			s.mu.RLock()
			_, ok := s.entries["old"]
			s.mu.RUnlock()
			held = held || ok
		}
		require.False(t, held, "the key of the real clock is still held")
	})
}

// TestWaitAcrossBubbles: limiters made outside a bubble queue waiters inside
// one, and limiters whose waiters queued in a bubble queue them again after
// it: nothing of a wait outlives it, to be touched from the wrong side.
func TestWaitAcrossBubbles(t *testing.T) {
	wait := func(t *testing.T, l Limiter, n int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { require.NoError(t, l.WaitN(ctx, n)) })
		}
		wg.Wait()
	}
	limiters := func() []Limiter {
		return []Limiter{
			NewTokenBucket(1000, 1), NewSlidingWindow(1, time.Millisecond),
			NewSlidingWindowCounter(1, time.Millisecond), newBuckets(1000, 1, KeyedConfig{}).Limiter("a"),
		}
	}
	outside := limiters()
	synctest.Test(t, func(t *testing.T) {
		for _, l := range outside {
			wait(t, l, 1)
		}
	})
	var inside []Limiter
	synctest.Test(t, func(t *testing.T) {
		inside = limiters()
		for _, l := range inside {
			wait(t, l, 1)
		}
	})
	for _, l := range inside {
		wait(t, l, 1)
	}
}

// TestTokenBucketAllowNAtStaleOverAnHour: a t over an hour behind the
// bucket's state was taken for a time of another clock, and the bucket
// started full: a stale time (a request's arrival time, replayed two hours
// late) got a token from an empty bucket, and a call at the clock's time
// then got another, three events at one instant with a burst of 1. Whether
// the state is of another clock is judged against the clock, not t.
func TestTokenBucketAllowNAtStaleOverAnHour(t *testing.T) {
	b := NewTokenBucket(1, 1) // one a second
	now := time.Now()
	require.True(t, b.AllowNAt(1, now))
	require.False(t, b.AllowNAt(1, now), "empty")
	for _, back := range []time.Duration{2 * time.Hour, 100 * 365 * 24 * time.Hour} {
		require.False(t, b.AllowNAt(1, now.Add(-back)), "a time %v stale gave out a token", back)
		require.False(t, b.AllowNAt(1, now), "the bucket was full again at the same instant")
	}
	// The state of the real clock, seen from a bubble's through AllowNAt,
	// is still taken for another clock's: the bucket starts full there.
	synctest.Test(t, func(t *testing.T) {
		require.True(t, b.AllowNAt(1, time.Now()), "the real clock's state held in a bubble")
		require.False(t, b.AllowNAt(1, time.Now()))
	})
}
