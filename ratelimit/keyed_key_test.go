package ratelimit

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireKeyPanic checks that f panics with a message of the package that
// starts with want.
func requireKeyPanic(t *testing.T, want string, f func()) {
	t.Helper()
	var p any
	func() {
		defer func() { p = recover() }()
		f()
	}()
	msg, ok := p.(string)
	require.True(t, ok, "panicked with %T %v, not a message of the package", p, p)
	require.True(t, strings.HasPrefix(msg, want), "panicked with %q", msg)
}

// A NaN key is never found again in a map: each call made a new limiter for
// it, with a fresh allowance (no limit at all), and left it in the map for
// good, since no delete can take a NaN out. It panics, as a KeyedLock's, and
// nothing is kept.
func TestKeyedNaNKey(t *testing.T) {
	made := 0
	k := NewKeyed(func(float64) *TokenBucket { made++; return NewTokenBucket(1, 1) }, KeyedConfig{})
	nan := math.NaN()
	for range 3 {
		requireKeyPanic(t, "ratelimit: Keyed key not equal to itself", func() { k.Allow(nan) })
	}
	requireKeyPanic(t, "ratelimit: Keyed key not equal to itself", func() { k.WaitN(context.Background(), nan, 1) })
	require.Zero(t, k.Len())
	require.Zero(t, made, "a limiter was made for a key that is never found again")
	require.True(t, k.Allow(1))
	require.False(t, k.Allow(1))
}

// A key of an interface type that holds a value that cannot be compared
// panics in the package's words, and leaves the Keyed usable.
func TestKeyedKeyThatCannotBeCompared(t *testing.T) {
	k := NewKeyed(func(any) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	requireKeyPanic(t, "ratelimit: Keyed with a key that cannot be compared", func() { k.Allow([]int{1}) })
	requireKeyPanic(t, "ratelimit: Keyed with a key that cannot be compared", func() { k.Take(map[int]int{}, 1) })
	require.True(t, k.Allow("a"))
	require.Equal(t, 1, k.Len())
}
