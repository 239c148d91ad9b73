package ratelimit

// The tests of this file pin the queue of WaitN that the limiters share (see
// waiters): who counts ahead of a newcomer, and when a deadline is out of
// reach.

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestWaitDeadWaiterNotAheadOnEntry: a waiter whose ctx has ended is no
// longer a waiter, yet until its goroutine ran again its events counted
// ahead of a newcomer, which was refused with ErrWouldExceedDeadline though
// its deadline could be met.
func TestWaitDeadWaiterNotAheadOnEntry(t *testing.T) {
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(1, 1)
		require.True(t, b.Allow()) // empty; next token at 1s
		head := make(chan error, 1)
		go func() { head <- b.Wait(t.Context()) }()
		synctest.Wait()
		dctx, dcancel := context.WithCancel(t.Context())
		dead := make(chan error, 1)
		go func() { dead <- b.Wait(dctx) }()
		synctest.Wait()
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 2500*time.Millisecond)
		defer cancel()
		dcancel() // the middle waiter gives up: its turn is gone
		// The head's token comes at 1s, ours at 2s: before the deadline.
		err := b.Wait(ctx)
		assert.NoError(t, err, "refused although only the head is ahead")
		if err == nil {
			assert.Equal(t, 2*time.Second, time.Since(start))
		}
		require.NoError(t, <-head)
		require.Equal(t, context.Canceled, <-dead)
	})
}

// TestWaitDeadWaiterNotAheadInSetRate: the same through SetRate's check of
// the waiters kept: the events of a waiter that gave up counted ahead of
// those behind it, and SetRate turned away a waiter whose deadline it could
// meet.
func TestWaitDeadWaiterNotAheadInSetRate(t *testing.T) {
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(1, 1)
		require.True(t, b.Allow())
		head := make(chan error, 1)
		go func() { head <- b.Wait(t.Context()) }()
		synctest.Wait()
		dctx, dcancel := context.WithCancel(t.Context())
		dead := make(chan error, 1)
		go func() { dead <- b.Wait(dctx) }()
		synctest.Wait()
		// At 1 a second the last waiter's token, after two, comes at 3s.
		ctx, cancel := context.WithTimeout(t.Context(), 3100*time.Millisecond)
		defer cancel()
		last := make(chan error, 1)
		go func() { last <- b.Wait(ctx) }()
		synctest.Wait()
		b.w.q.Lock()
		require.Equal(t, 2, b.w.q.Len(), "the last waiter is queued")
		b.w.q.Unlock()
		start := time.Now()
		dcancel()
		// 1.25s a token: the head's at 1.25s, the last one's at 2.5s,
		// before its deadline of 3.1s (with the middle one still counted,
		// 3.75s: after it).
		b.SetRate(0.8)
		require.NoError(t, <-head)
		require.Equal(t, context.Canceled, <-dead)
		err := <-last
		assert.NoError(t, err, "turned away although its token comes in time")
		if err == nil {
			assert.Equal(t, 2500*time.Millisecond, time.Since(start))
		}
	})
}

// TestWaitEventsAtTheDeadline: events that come exactly at ctx's deadline,
// the instant ctx ends, cannot come before it: WaitN fails at once with
// ErrWouldExceedDeadline. It slept until the deadline, then failed with
// ctx's error (TokenBucket) or granted the events as ctx ended
// (SlidingWindow).
func TestWaitEventsAtTheDeadline(t *testing.T) {
	for _, mk := range []struct {
		name string
		l    func() waitLimiter
	}{
		{"TokenBucket", func() waitLimiter { return NewTokenBucket(1, 1) }},
		{"SlidingWindow", func() waitLimiter { return NewSlidingWindow(1, time.Second) }},
		{"SlidingWindowCounter", func() waitLimiter { return NewSlidingWindowCounter(1, time.Second) }},
	} {
		t.Run(mk.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := mk.l()
				require.True(t, l.AllowN(1))
				d := l.Take(1) // when the next event comes
				require.False(t, d.Allowed)
				require.Positive(t, d.RetryAfter)
				ctx, cancel := context.WithTimeout(t.Context(), d.RetryAfter)
				defer cancel()
				start := time.Now()
				err := l.WaitN(ctx, 1)
				assert.Equal(t, ErrWouldExceedDeadline, err)
				assert.Zero(t, time.Since(start), "did not fail at once")
			})
		})
	}
}

// TestWaitDeadHeadNotAhead: the head whose ctx has ended leaves when its
// goroutine next runs; until then its events counted ahead of a newcomer,
// on entry and in SetRate's check, which refused waiters whose deadline
// could be met.
func TestWaitDeadHeadNotAhead(t *testing.T) {
	testutil.OneProcessor(t)
	t.Run("entry", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := NewTokenBucket(1, 1)
			require.True(t, b.Allow()) // empty; next token at 1s
			hctx, hcancel := context.WithCancel(t.Context())
			head := make(chan error, 1)
			go func() { head <- b.Wait(hctx) }()
			synctest.Wait()
			ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
			defer cancel()
			hcancel()
			assert.NoError(t, b.Wait(ctx), "refused although nobody is ahead")
			require.Equal(t, context.Canceled, <-head)
		})
	})
	t.Run("SetRate", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := NewTokenBucket(1, 1)
			require.True(t, b.Allow())
			hctx, hcancel := context.WithCancel(t.Context())
			head := make(chan error, 1)
			go func() { head <- b.Wait(hctx) }()
			synctest.Wait()
			ctx, cancel := context.WithTimeout(t.Context(), 2100*time.Millisecond)
			defer cancel()
			last := make(chan error, 1)
			go func() { last <- b.Wait(ctx) }()
			synctest.Wait()
			hcancel()
			// 1.25s a token: the last one's at 1.25s with the head gone,
			// 2.5s with it counted: after its deadline of 2.1s.
			b.SetRate(0.8)
			require.Equal(t, context.Canceled, <-head)
			assert.NoError(t, <-last, "turned away although its token comes in time")
		})
	})
}
