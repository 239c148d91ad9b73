package redislimit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// Regression: a nil *Limiter or *Handle (a field of the user's never set)
// panicked with a nil pointer dereference inside the package, where the
// zero values panic saying what to use, and where redissync's nil
// *Semaphore, *Keyed and *Permit, and ratelimit's nil *Tally, do too. Misuse
// panics with a message that names the package: the same as the zero
// value's.
func TestReview11NilReceiversSayWhatToUse(t *testing.T) {
	ctx := context.Background()
	const useNew = "redislimit: use New; the zero Limiter is not usable"
	var l *Limiter
	require.PanicsWithValue(t, useNew, func() { _, _ = l.TakeContext(ctx, "k", 1) })
	require.PanicsWithValue(t, useNew, func() { _, _ = l.AllowN(ctx, "k", 1) })
	require.PanicsWithValue(t, useNew, func() { _, _ = l.Allow(ctx, "k") })
	require.PanicsWithValue(t, useNew, func() { l.Take("k", 1) })
	require.PanicsWithValue(t, useNew, func() { _ = l.WaitN(ctx, "k", 1) })
	require.PanicsWithValue(t, useNew, func() { _ = l.Reset(ctx, "k") })
	require.PanicsWithValue(t, useNew, func() { l.For("k") })
	require.PanicsWithValue(t, useNew, func() { l.Key("k") })
	require.PanicsWithValue(t, useNew, func() { l.Failures() })

	const useFor = "redislimit: use Limiter.For; the zero Handle is not usable"
	var h *Handle
	require.PanicsWithValue(t, useFor, func() { h.AllowN(1) })
	require.PanicsWithValue(t, useFor, func() { h.Take(1) })
	require.PanicsWithValue(t, useFor, func() { _ = h.WaitN(ctx, 1) })
}
