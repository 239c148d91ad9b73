package ratelimit

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// Regression: Keyed.WaitN with a done ctx returned ctx.Err() before it looked
// at the key, so a NaN key, or an interface key holding a value that cannot
// be compared, went unreported whenever the ctx had ended: misuse that
// panics or not by the state of a ctx. A zero Keyed and a bad n panic even
// with a done ctx (see WaitN), and so does a bad key. The same holds for a
// handle's WaitN.
func TestKeyedWaitNBadKeyPanicsWithDoneCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	kf := NewKeyed(func(float64) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	testutil.RequirePanicPrefix(t, "ratelimit: Keyed key not equal to itself", func() { _ = kf.WaitN(ctx, math.NaN(), 1) })
	ka := NewKeyed(func(any) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	testutil.RequirePanicPrefix(t, "ratelimit: Keyed.WaitN with a key that cannot be compared", func() { _ = ka.WaitN(ctx, []int{1}, 1) })
	require.Zero(t, kf.Len())
	require.Zero(t, ka.Len())
	require.ErrorIs(t, kf.WaitN(ctx, 1, 1), context.Canceled)
}
