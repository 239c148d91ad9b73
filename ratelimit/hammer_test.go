package ratelimit

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestHammerKeyedUserPanics: goroutines Allow, Take and WaitN (with deadlines
// and cancellations) on overlapping keys of a small Keyed, whose newLimiter
// panics for one call in three. Each panic reaches its caller; afterwards no
// key counts a waiter, none was over-issued, and every key made works.
func TestHammerKeyedUserPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const burst = 3
		var made atomic.Int64
		k := NewKeyed(func(string) *TokenBucket {
			if made.Add(1)%3 == 0 {
				panic("newLimiter failed")
			}
			return NewTokenBucket(1e-3, burst) // no refill to speak of
		}, KeyedConfig{MaxKeys: 8, TTL: time.Hour})
		var panics, granted atomic.Int64
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 7))
				for range testutil.HammerRounds(100) {
					key := strconv.Itoa(r.IntN(12))
					func() {
						defer func() {
							if v := recover(); v != nil {
								assert.Equal(t, "newLimiter failed", v)
								panics.Add(1)
							}
						}()
						switch r.IntN(3) {
						case 0:
							if k.Allow(key) {
								granted.Add(1)
							}
						case 1:
							if k.Take(key, 1).Allowed {
								granted.Add(1)
							}
						default:
							ctx, cancel := context.WithCancel(t.Context())
							if r.IntN(2) == 0 {
								ctx, cancel = context.WithTimeout(t.Context(), time.Duration(r.IntN(5))*time.Second)
							}
							stop := time.AfterFunc(time.Duration(r.IntN(3))*time.Second, cancel)
							err := k.WaitN(ctx, key, 1)
							stop.Stop()
							cancel()
							switch {
							case err == nil:
								granted.Add(1)
							case errors.Is(err, context.DeadlineExceeded), err == context.Canceled:
							default:
								t.Errorf("WaitN = %v", err)
							}
						}
					}()
				}
			})
		}
		wg.Wait()
		require.Positive(t, panics.Load())
		for i := range k.shards {
			s := &k.shards[i]
			s.mu.RLock()
			for key, e := range s.entries {
				assert.Zero(t, e.waiting.Load(), "key %s still counts waiters", key)
				assert.LessOrEqual(t, e.lim.Tokens(), float64(burst))
			}
			s.mu.RUnlock()
		}
		// Twelve keys of three tokens each, evicted keys starting over: a
		// bound, not a count.
		require.Positive(t, granted.Load())
		made.Store(1) // the next call makes one
		require.True(t, k.Allow("fresh"))
	})
}

// TestQueuedCountWraps: the events asked for by the waiters add up past
// math.MaxInt (waiters of a counter whose limit is near it, or a hundred of a
// bucket's largest burst). The sum wrapped negative, and Take told the next
// caller to come back at once; the windows could index their times with it.
// It now reads as more than any limiter allows, and comes back to 0 exactly
// as the waiters leave.
func TestQueuedCountWraps(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    interface {
			waitLimiter
			queuedEvents() int
		}
		n int
	}{
		{"TokenBucket", (*queuedBucket)(NewTokenBucket(2e9, 1<<57)), 1 << 57},
		{"SlidingWindowCounter", (*queuedCounter)(NewSlidingWindowCounter(math.MaxInt, time.Hour)), math.MaxInt/2 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				require.True(t, tc.l.AllowN(tc.n))
				ctx, cancel := context.WithCancel(t.Context())
				var wg sync.WaitGroup
				for range 70 {
					wg.Go(func() { assert.Equal(t, context.Canceled, tc.l.WaitN(ctx, tc.n)) })
				}
				synctest.Wait()
				d := tc.l.Take(1)
				require.False(t, d.Allowed)
				require.Greater(t, d.RetryAfter, time.Hour, "with %d events asked for ahead", tc.l.queuedEvents())
				hour, cancelHour := context.WithTimeout(t.Context(), time.Hour)
				require.ErrorIs(t, tc.l.WaitN(hour, 1), ErrWouldExceedDeadline)
				cancelHour()
				cancel()
				wg.Wait()
				require.Zero(t, tc.l.queuedEvents())
			})
		})
	}
}

type queuedBucket TokenBucket

func (b *queuedBucket) AllowN(n int) bool { return (*TokenBucket)(b).AllowN(n) }
func (b *queuedBucket) WaitN(ctx context.Context, n int) error {
	return (*TokenBucket)(b).WaitN(ctx, n)
}
func (b *queuedBucket) Take(n int) Decision { return (*TokenBucket)(b).Take(n) }
func (b *queuedBucket) queuedEvents() int {
	b.w.q.Lock()
	defer b.w.q.Unlock()
	return b.w.queued
}

type queuedCounter SlidingWindowCounter

func (c *queuedCounter) AllowN(n int) bool { return (*SlidingWindowCounter)(c).AllowN(n) }
func (c *queuedCounter) WaitN(ctx context.Context, n int) error {
	return (*SlidingWindowCounter)(c).WaitN(ctx, n)
}
func (c *queuedCounter) Take(n int) Decision { return (*SlidingWindowCounter)(c).Take(n) }
func (c *queuedCounter) queuedEvents() int {
	c.w.q.Lock()
	defer c.w.q.Unlock()
	return c.w.queued
}
