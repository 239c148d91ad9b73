package redislimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Regression: under FailLocal, Reset deleted the key in Redis but left the
// in-process bucket that the Policy falls back to as it was: a key emptied
// during an outage stayed refused by this instance after Reset, whether the
// DEL went through (Redis answers, the script fails) or Redis was gone, though
// Reset's doc says the key's bucket is full again. Reset makes both full: the
// local buckets at once, whatever Redis answers, since they are this
// instance's alone and cannot fail.
func TestReview12ResetRefillsFailLocalBucket(t *testing.T) {
	ctx := context.Background()
	t.Run("the DEL goes through", func(t *testing.T) {
		c := backends(t)[0].client(t)
		h := &armedHook{lone: isEval, piped: isEval, act: func() error { return errors.New("script down") }}
		c.AddHook(h)
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 2, Policy: FailLocal})
		h.armed.Store(true)
		for i := range 2 {
			d, err := l.TakeContext(ctx, "k", 1)
			require.ErrorIs(t, err, ErrUnavailable)
			require.True(t, d.Allowed, "local grant %d", i)
		}
		d, _ := l.TakeContext(ctx, "k", 1)
		require.False(t, d.Allowed, "the local bucket is empty")

		require.NoError(t, l.Reset(ctx, "k"))
		d, err := l.TakeContext(ctx, "k", 1)
		require.ErrorIs(t, err, ErrUnavailable)
		require.True(t, d.Allowed, "after Reset the local bucket still refuses: %+v", d)
	})
	t.Run("Redis gone", func(t *testing.T) {
		c := backend{addr: "127.0.0.1:1"}.client(t) // nothing listens there
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 2, Policy: FailLocal, LocalShare: 0.5})
		d, err := l.TakeContext(ctx, "k", 1)
		require.ErrorIs(t, err, ErrUnavailable)
		require.True(t, d.Allowed)
		d, _ = l.TakeContext(ctx, "k", 1)
		require.False(t, d.Allowed, "the local bucket (1 of 2) is empty")

		require.ErrorIs(t, l.Reset(ctx, "k"), ErrUnavailable)
		d, err = l.TakeContext(ctx, "k", 1)
		require.ErrorIs(t, err, ErrUnavailable)
		require.True(t, d.Allowed, "after Reset the local bucket still refuses: %+v", d)

		// A done ctx fails Reset and changes nothing, the local bucket
		// included.
		done, cancel := context.WithCancel(ctx)
		cancel()
		require.Equal(t, context.Canceled, l.Reset(done, "k"))
		d, _ = l.TakeContext(ctx, "k", 1)
		require.False(t, d.Allowed, "a Reset with a done ctx refilled the local bucket")
	})
	t.Run("Limits", func(t *testing.T) {
		c := backend{addr: "127.0.0.1:1"}.client(t)
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 2, Policy: FailLocal,
			Limits: []Limit{{Rate: 1e-4, Burst: 1}}})
		d, _ := l.TakeContext(ctx, "k", 1)
		require.True(t, d.Allowed)
		d, _ = l.TakeContext(ctx, "k", 1)
		require.False(t, d.Allowed, "the second limit (burst 1) is empty")
		require.ErrorIs(t, l.Reset(ctx, "k"), ErrUnavailable)
		d, _ = l.TakeContext(ctx, "k", 1)
		require.True(t, d.Allowed, "after Reset a local bucket of the Limits still refuses: %+v", d)
	})
}

// Resets racing with FailLocal's decisions: no race, and the local grants
// stay within a burst per Reset (and the first), each Take landing on the
// bucket before or after a Reset.
func TestReview12ResetRacesFailLocal(t *testing.T) {
	c := backends(t)[0].client(t)
	h := &armedHook{lone: isEvalOrDel, piped: isEvalOrDel, act: func() error { return errors.New("down") }}
	h.armed.Store(true)
	c.AddHook(h)
	l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 3, Policy: FailLocal})
	ctx := context.Background()
	const resets = 20
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if d, _ := l.TakeContext(ctx, "k", 1); d.Allowed {
					granted.Add(1)
				}
			}
		})
	}
	for range resets {
		require.ErrorIs(t, l.Reset(ctx, "k"), ErrUnavailable)
	}
	wg.Wait()
	require.LessOrEqual(t, granted.Load(), int64(3*(resets+1)))
	require.Equal(t, 1, l.local.Len())
}
