package ratelimit

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// A NaN key is never found again in a map: each call made a new limiter for
// it, with a fresh allowance (no limit at all), and left it in the map for
// good, since no delete can take a NaN out. It panics, as a KeyedLock's, and
// nothing is kept.
func TestKeyedNaNKey(t *testing.T) {
	made := 0
	k := NewKeyed(func(float64) *TokenBucket { made++; return NewTokenBucket(1, 1) }, KeyedConfig{})
	nan := math.NaN()
	for range 3 {
		testutil.RequirePanicPrefix(t, "ratelimit: Keyed key not equal to itself", func() { k.Allow(nan) })
	}
	testutil.RequirePanicPrefix(t, "ratelimit: Keyed key not equal to itself", func() { k.WaitN(context.Background(), nan, 1) })
	require.Zero(t, k.Len())
	require.Zero(t, made, "a limiter was made for a key that is never found again")
	require.True(t, k.Allow(1))
	require.False(t, k.Allow(1))
}

// A key of an interface type that holds a value that cannot be compared
// panics in the package's words, and leaves the Keyed usable.
func TestKeyedKeyThatCannotBeCompared(t *testing.T) {
	k := NewKeyed(func(any) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	testutil.RequirePanicPrefix(t, "ratelimit: Keyed.AllowN with a key that cannot be compared", func() { k.Allow([]int{1}) })
	testutil.RequirePanicPrefix(t, "ratelimit: Keyed.Take with a key that cannot be compared", func() { k.Take(map[int]int{}, 1) })
	require.True(t, k.Allow("a"))
	require.Equal(t, 1, k.Len())
}
