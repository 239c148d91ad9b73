package ratelimit

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// Regression: Keyed.Limiter took a NaN key, or an interface key holding a
// value that cannot be compared, without a word, although the Keyed's doc
// says every method that takes a key panics on one: the handle, passed on
// to code far from the mistake (a Combined, a Transport), panicked at its
// every use instead. Limiter panics at once, naming itself.
func TestKeyedLimiterBadKeyPanicsAtOnce(t *testing.T) {
	kf := NewKeyed(func(float64) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	testutil.RequirePanicPrefix(t, "ratelimit: Keyed.Limiter", func() { kf.Limiter(math.NaN()) })
	ka := NewKeyed(func(any) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	testutil.RequirePanicPrefix(t, "ratelimit: Keyed.Limiter with a key that cannot be compared", func() { ka.Limiter(map[int]int{}) })
	testutil.RequirePanicPrefix(t, "ratelimit: Keyed.Limiter", func() { ka.Limiter(math.NaN()) })
	require.Zero(t, kf.Len())
	require.Zero(t, ka.Len())
	require.True(t, kf.Limiter(1).AllowN(1))
}

// Regression: Limiter of a zero Keyed returned a handle without a word,
// although the Keyed's doc says its methods panic: the handle panicked at
// its every use, far from the mistake. Limiter panics at once.
func TestZeroKeyedLimiterPanicsAtOnce(t *testing.T) {
	var k Keyed[string, *TokenBucket]
	testutil.RequirePanicPrefix(t, errZeroKeyed, func() { k.Limiter("a") })
}
