package ratelimit

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTokenBucketBurstThenRate: rate 10/s, burst 5, 20 waiters in a row: the
// first 5 at once, then one every 100ms, the last at 1.5s, in order.
func TestTokenBucketBurstThenRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(10, 5)
		start := time.Now()
		done := make([]time.Duration, 20)
		var order []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				assert.NoError(t, b.Wait(t.Context()))
				mu.Lock()
				order = append(order, i)
				done[i] = time.Since(start)
				mu.Unlock()
			})
			synctest.Wait() // queued in this order
		}
		wg.Wait()
		for i, d := range done {
			want := time.Duration(max(0, i-4)) * 100 * time.Millisecond
			require.Equal(t, want, d, "waiter %d", i)
		}
		require.Equal(t, 1500*time.Millisecond, done[19])
		for i, v := range order {
			require.Equal(t, i, v, "served out of order")
		}
	})
}

// TestTokenBucketSteadyRate: over a long run, a pacer allows exactly the rate.
func TestTokenBucketSteadyRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(100, 1)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second+5*time.Millisecond)
		defer cancel()
		n := 0
		var last time.Time
		for b.Wait(ctx) == nil {
			now := time.Now()
			if n > 0 {
				require.Equal(t, 10*time.Millisecond, now.Sub(last), "a pacer spaces events evenly")
			}
			last = now
			n++
		}
		// The first at 0, then one per 10ms up to 10s; the next is due after
		// the deadline, so the wait fails at once rather than sleep.
		require.Equal(t, 1001, n)
	})
}

// TestTokenBucketNoOverIssue: many goroutines calling Allow at once never get
// more than burst + rate × elapsed.
func TestTokenBucketNoOverIssue(t *testing.T) {
	const rate, burst = 100_000.0, 50
	b := NewTokenBucket(rate, burst)
	var granted atomic.Int64
	start := nowNs()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range testutil.HammerRounds(20_000) {
				if b.Allow() {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := float64(nowNs()-start) / 1e9
	bound := burst + rate*elapsed
	require.LessOrEqual(t, float64(granted.Load()), bound, "over-issued: %d in %.6fs", granted.Load(), elapsed)
	require.Greater(t, granted.Load(), int64(burst), "no refill at all")
}

// TestTokenBucketStaleTime pins golang/go#71360: a caller whose reading of the
// clock is older than another's must not be given tokens twice. The state only
// moves forward.
func TestTokenBucketStaleTime(t *testing.T) {
	b := NewTokenBucket(1, 1) // one token per second
	t0 := time.Now().Add(time.Hour)
	require.True(t, b.AllowNAt(1, t0))
	for _, back := range []time.Duration{time.Second / 2, time.Second, 10 * time.Second} {
		require.False(t, b.AllowNAt(1, t0.Add(-back)), "a stale time %v before gave out a token", back)
	}
	require.False(t, b.AllowNAt(1, t0.Add(time.Second/2)))
	require.True(t, b.AllowNAt(1, t0.Add(time.Second)))
	require.False(t, b.AllowNAt(1, t0), "going back again")

	// Out-of-order times from many goroutines: within any span of times,
	// never more than burst + rate × span.
	b2 := NewTokenBucket(1000, 10)
	base := time.Now().Add(2 * time.Hour)
	var granted atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 2000 {
				if b2.AllowNAt(1, base.Add(time.Duration(r.IntN(int(time.Second))))) {
					granted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, granted.Load(), int64(10+1000), "over-issued with out-of-order times")
}

func TestTokenBucketTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(2, 4)
		require.Equal(t, 4.0, b.Tokens(), "starts full")
		require.True(t, b.AllowN(3))
		require.InDelta(t, 1.0, b.Tokens(), 1e-9)
		require.False(t, b.AllowN(2))
		require.InDelta(t, 1.0, b.Tokens(), 1e-9, "a refused AllowN takes nothing")
		time.Sleep(time.Second)
		require.InDelta(t, 3.0, b.Tokens(), 1e-9)
		time.Sleep(time.Hour)
		require.Equal(t, 4.0, b.Tokens(), "never above the burst")
		require.Equal(t, 2.0, b.Rate())
		require.Equal(t, 4, b.Burst())
	})
}

func TestTokenBucketTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(10, 5) // refills in 500ms
		d := b.Take(2)
		require.Equal(t, Decision{Allowed: true, Limit: 5, Window: 500 * time.Millisecond,
			Remaining: 3, ResetAfter: 200 * time.Millisecond}, d)
		d = b.Take(4)
		require.False(t, d.Allowed)
		require.Equal(t, 3, d.Remaining)
		require.Equal(t, 100*time.Millisecond, d.RetryAfter, "one token short")
		require.Equal(t, time.Duration(-1), b.Take(6).RetryAfter, "more than the burst, ever")
	})
}

func TestTokenBucketInfiniteRate(t *testing.T) {
	b := NewTokenBucket(math.Inf(1), 3)
	for range 1000 {
		require.True(t, b.AllowN(3))
	}
	require.False(t, b.AllowN(4), "n above the burst")
	require.NoError(t, b.WaitN(context.Background(), 2))
	require.Equal(t, 3.0, b.Tokens())
}

func TestTokenBucketWaitErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(1, 3)
		require.Equal(t, ErrExceedsBurst, b.WaitN(t.Context(), 4))

		// Done already: fails even with tokens, and takes none.
		require.Equal(t, context.Canceled, b.Wait(testutil.Cancelled()))
		require.Equal(t, 3.0, b.Tokens())

		require.True(t, b.AllowN(3))
		// 2 tokens need 2s: a 1s deadline fails at once, without sleeping.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		err := b.WaitN(ctx, 2)
		require.Equal(t, ErrWouldExceedDeadline, err)
		require.True(t, errors.Is(err, context.DeadlineExceeded))
		require.Zero(t, time.Since(start), "slept before giving up")

		// Behind another waiter too: the tokens it waits for count, and the
		// answers come at once, without queueing.
		head := make(chan error, 1)
		go func() { head <- b.WaitN(t.Context(), 2) }() // served at 2s
		synctest.Wait()
		ctx2, cancel2 := context.WithTimeout(t.Context(), 2500*time.Millisecond)
		defer cancel2()
		require.Equal(t, ErrWouldExceedDeadline, b.WaitN(ctx2, 1), "1 token after the head's 2 needs 3s")
		require.Equal(t, ErrExceedsBurst, b.WaitN(t.Context(), 4))
		require.Zero(t, time.Since(start), "queued before giving up")

		require.NoError(t, <-head)
		require.Equal(t, 2*time.Second, time.Since(start))

		// The head looks again when the rate changes: a deadline it could
		// meet at the old rate fails at once when it no longer can.
		ctx3, cancel3 := context.WithTimeout(t.Context(), 2500*time.Millisecond)
		defer cancel3()
		waiter := make(chan error, 1)
		go func() { waiter <- b.WaitN(ctx3, 2) }() // empty: 2s at rate 1, in time
		synctest.Wait()
		b.SetRate(0.5) // now 4s
		require.Equal(t, ErrWouldExceedDeadline, <-waiter)
		require.Equal(t, 2*time.Second, time.Since(start), "slept before giving up")
	})
}

// TestTokenBucketCancelGivesBackExactly: a waiter that gives up has reserved
// nothing, so the one behind it is served as if it had never been there
// (x/time/rate's refunds are approximate: golang/go#56924).
func TestTokenBucketCancelGivesBackExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(1, 3)
		require.True(t, b.AllowN(3)) // empty
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		big := make(chan error)
		go func() { big <- b.WaitN(ctx, 3) }()
		synctest.Wait()
		small := make(chan time.Duration)
		go func() {
			assert.NoError(t, b.WaitN(t.Context(), 1))
			small <- time.Since(start)
		}()
		synctest.Wait()
		require.False(t, b.Allow(), "a newcomer overtook the waiters")

		time.Sleep(500 * time.Millisecond)
		cancel()
		require.Equal(t, context.Canceled, <-big)
		require.Equal(t, time.Second, <-small, "the next waiter should get the first token")
		require.InDelta(t, 0, b.Tokens(), 1e-9)
	})
}

// TestTokenBucketFIFO: a large request at the head is not passed by small
// ones.
func TestTokenBucketFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(1, 4)
		require.True(t, b.AllowN(4))
		start := time.Now()
		var times [3]time.Duration
		var wg sync.WaitGroup
		for i, n := range []int{3, 1, 1} {
			wg.Go(func() {
				assert.NoError(t, b.WaitN(t.Context(), n))
				times[i] = time.Since(start)
			})
			synctest.Wait()
		}
		wg.Wait()
		require.Equal(t, [3]time.Duration{3 * time.Second, 4 * time.Second, 5 * time.Second}, times)
	})
}

// TestAllowRefusesWhileWaitersQueue: once a WaitN queues, Allow and Take
// refuse even what they could take, so that no newcomer overtakes it, and the
// waiter gets its events on time.
func TestAllowRefusesWhileWaitersQueue(t *testing.T) {
	for _, tc := range []struct {
		name   string
		new    func() Taker
		fill   func(l Taker) // leaves no room, then room for one event at 1.5s
		n      int           // what the waiter asks for
		served time.Duration // when it gets it
	}{
		{"TokenBucket", func() Taker { return NewTokenBucket(1, 2) }, func(l Taker) {
			require.True(t, l.Take(2).Allowed)
		}, 2, 2 * time.Second},
		{"SlidingWindow", func() Taker { return NewSlidingWindow(2, 1200*time.Millisecond) }, func(l Taker) {
			require.True(t, l.Take(1).Allowed) // leaves the window at 1.2s
			time.Sleep(time.Second)
			require.True(t, l.Take(1).Allowed) // at 1s: the waiter gets both at 2.2s
		}, 2, 2200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := tc.new()
				start := time.Now()
				tc.fill(l)
				served := make(chan time.Duration, 1)
				go func() {
					assert.NoError(t, l.(Limiter).WaitN(t.Context(), tc.n))
					served <- time.Since(start)
				}()
				synctest.Wait()
				time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
				// There is room for one event now, but the waiter came first.
				d := l.Take(1)
				require.False(t, d.Allowed, "a newcomer overtook a waiter")
				require.False(t, l.(Limiter).AllowN(1))
				require.Positive(t, d.RetryAfter)
				require.Equal(t, tc.served, <-served)
			})
		})
	}
}

// TestTokenBucketSetRateWhileWaiting: waiters are served at the new rate, from
// the tokens already there.
func TestTokenBucketSetRateWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(1, 1)
		require.True(t, b.Allow())
		start := time.Now()
		done := make(chan time.Duration)
		go func() {
			assert.NoError(t, b.Wait(t.Context()))
			done <- time.Since(start)
		}()
		time.Sleep(100 * time.Millisecond) // 0.1 token
		b.SetRate(10)                      // 0.9 token to go, at 10/s
		require.Equal(t, 190*time.Millisecond, <-done)
		require.Equal(t, 10.0, b.Rate())
	})
}

func TestTokenBucketSetBurstWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(1, 4)
		require.True(t, b.AllowN(4))
		big := make(chan error)
		go func() { big <- b.WaitN(t.Context(), 4) }()
		synctest.Wait()
		b.SetBurst(2)
		require.Equal(t, ErrExceedsBurst, <-big, "a waiter for more than the new burst")
		require.Equal(t, 2, b.Burst())
		require.True(t, b.Tokens() <= 2)

		// Growing keeps the tokens, and the burst then allows more.
		time.Sleep(10 * time.Second)
		b.SetBurst(5)
		require.InDelta(t, 2.0, b.Tokens(), 1e-9)
		time.Sleep(10 * time.Second)
		require.True(t, b.AllowN(5))
	})
}

// queueThree queues three WaitN calls on the empty b, in order, each alone
// in the bubble until it waits: the head for nHead tokens, then one for nMid
// under ctx, then one for a single token, with a deadline a minute off.
func queueThree(t *testing.T, ctx context.Context, b *TokenBucket, nHead, nMid int) (head, mid, last chan error) {
	head, mid, last = make(chan error, 1), make(chan error, 1), make(chan error, 1)
	go func() { head <- b.WaitN(t.Context(), nHead) }()
	synctest.Wait()
	go func() { mid <- b.WaitN(ctx, nMid) }()
	synctest.Wait()
	roomy, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	go func() { last <- b.WaitN(roomy, 1) }()
	synctest.Wait()
	return head, mid, last
}

// TestTokenBucketSetTurnsAwayQueued: a waiter behind the head that a setter
// leaves unservable, as WaitN judges on entry, fails at once rather than when
// its turn comes or its deadline passes, and the one behind it moves up:
// asking for more than the new burst, or with a deadline that the new rate
// puts out of reach. The last waiter's deadline can still be met: it stays.
func TestTokenBucketSetTurnsAwayQueued(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rate        float64
		burst, nMid int
		midDeadline time.Duration // 0 for none
		set         func(b *TokenBucket)
		want        error
	}{
		{"SetBurst below its ask", 1, 3, 3, 0, func(b *TokenBucket) { b.SetBurst(2) }, ErrExceedsBurst},
		// At 10 a second its token is due in 200ms; at 1 a second, after
		// the head's, in 2s.
		{"SetRate past its deadline", 10, 1, 1, 1500 * time.Millisecond, func(b *TokenBucket) { b.SetRate(1) }, ErrWouldExceedDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := NewTokenBucket(tc.rate, tc.burst)
				require.True(t, b.AllowN(tc.burst))
				ctx := t.Context()
				if tc.midDeadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.midDeadline)
					defer cancel()
				}
				head, mid, last := queueThree(t, ctx, b, 1, tc.nMid)
				start := time.Now()
				tc.set(b)
				require.Equal(t, tc.want, <-mid)
				require.Zero(t, time.Since(start), "turned away at once")
				require.NoError(t, <-head)
				require.NoError(t, <-last)
				require.Equal(t, 2*time.Second, time.Since(start), "a token each, at 1 a second")
			})
		})
	}
}

// TestTokenBucketSetRateCountsThoseAhead: the deadline a setter checks a
// waiter against is that of its turn, after every waiter it keeps ahead.
func TestTokenBucketSetRateCountsThoseAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(10, 1)
		require.True(t, b.Allow())
		head, mid, last := queueThree(t, t.Context(), b, 1, 1)
		ctx, cancel := context.WithTimeout(t.Context(), 3500*time.Millisecond)
		defer cancel()
		fourth := make(chan error, 1)
		go func() { fourth <- b.WaitN(ctx, 1) }()
		synctest.Wait()
		start := time.Now()
		b.SetRate(1) // its token, after three, is due in 4s
		require.Equal(t, ErrWouldExceedDeadline, <-fourth)
		require.Zero(t, time.Since(start), "turned away at once")
		for _, ch := range []chan error{head, mid, last} {
			require.NoError(t, <-ch)
		}
		require.Equal(t, 3*time.Second, time.Since(start))
	})
}

// TestTokenBucketDeadlineCheckSaturates: with a rate so slow that the waiters
// ahead need centuries, the deadline check does not overflow into a time
// that looks to have passed already.
func TestTokenBucketDeadlineCheckSaturates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const year = 365 * 24 * time.Hour
		b := NewTokenBucket(1/(3*year).Seconds(), 1) // a token every 3 years
		require.True(t, b.Allow())
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for range 150 {
			wg.Go(func() { assert.Equal(t, context.Canceled, b.WaitN(ctx, 1)) })
		}
		synctest.Wait()
		hour, cancelHour := context.WithTimeout(t.Context(), time.Hour)
		defer cancelHour()
		require.Equal(t, ErrWouldExceedDeadline, b.WaitN(hour, 1))
		cancel()
		wg.Wait()
	})
}

// TestTokenBucketTurnedAwayAsCtxEnds: a queued waiter turned away by SetBurst
// at the moment its ctx ends fails either way, and leaves the queue's
// accounting right: in particular it does not act as the head, which it never
// was. Its select picks at random between the two, so the test repeats.
func TestTokenBucketTurnedAwayAsCtxEnds(t *testing.T) {
	testutil.OneProcessor(t)
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			b := NewTokenBucket(1, 3)
			require.True(t, b.AllowN(3))
			ctx, cancel := context.WithCancel(t.Context())
			head, big, last := queueThree(t, ctx, b, 1, 3)
			start := time.Now()
			cancel()
			b.SetBurst(2)
			err := <-big
			require.True(t, err == context.Canceled || err == ErrExceedsBurst, "WaitN = %v", err)
			require.NoError(t, <-head)
			require.NoError(t, <-last)
			require.Equal(t, 2*time.Second, time.Since(start), "a token each, in turn")
			b.w.q.Lock()
			require.Zero(t, b.w.queued)
			b.w.q.Unlock()
		})
	}
}

// TestTokenBucketPromotedAsCtxEnds: the waiter next in line is made head at
// the moment its ctx ends. On one processor, in a bubble, its ctx is cancelled
// and the head leaves (a smaller burst refuses it) before it runs again; it
// must hand the role on, or the waiter behind it would wait forever.
func TestTokenBucketPromotedAsCtxEnds(t *testing.T) {
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		b := NewTokenBucket(1, 3)
		require.True(t, b.AllowN(3)) // empty: every WaitN queues
		ctx, cancel := context.WithCancel(t.Context())
		head, next, last := queueThree(t, ctx, b, 3, 1)
		start := time.Now()
		cancel()
		b.SetBurst(2) // the head now asks for more than the burst: it leaves
		require.ErrorIs(t, <-head, ErrExceedsBurst)
		require.Equal(t, context.Canceled, <-next)
		require.NoError(t, <-last, "the head's role was passed on")
		require.Equal(t, time.Second, time.Since(start), "one token, at the rate")
	})
}

// TestAcrossClocks: a limiter used on the real clock, then in a synctest
// bubble, whose clock reads years earlier: its state looks to be in the
// future, and is forgotten rather than refusing for years.
func TestAcrossClocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		l      interface{ AllowN(int) bool }
		refill time.Duration // until one more event is allowed
	}{
		{"TokenBucket", NewTokenBucket(1, 2), time.Second},
		{"SlidingWindow", NewSlidingWindow(2, time.Minute), time.Minute},
		{"SlidingWindowCounter", NewSlidingWindowCounter(2, time.Minute), 2 * time.Minute}, // its estimate weighs the window before
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.True(t, tc.l.AllowN(2))
			synctest.Test(t, func(t *testing.T) {
				require.True(t, tc.l.AllowN(2), "state from the real clock left it full")
				require.False(t, tc.l.AllowN(1))
				time.Sleep(tc.refill)
				require.True(t, tc.l.AllowN(1))
			})
		})
	}
}

func TestTokenBucketMisuse(t *testing.T) {
	for _, rate := range []float64{0, -1, math.NaN(), math.Inf(-1)} {
		require.Panics(t, func() { NewTokenBucket(rate, 1) }, "rate %v", rate)
	}
	require.PanicsWithValue(t, "ratelimit: NewTokenBucket with rate 0; the rate must be above 0", func() { NewTokenBucket(0, 1) })
	require.PanicsWithValue(t, "ratelimit: NewTokenBucket with burst 0; the burst must be at least 1", func() { NewTokenBucket(1, 0) })
	require.Panics(t, func() { NewTokenBucket(1e-9, 1000) }, "refill time over four years")
	b := NewTokenBucket(1, 1)
	require.PanicsWithValue(t, "ratelimit: TokenBucket.AllowN with n = 0; n must be at least 1", func() { b.AllowN(0) })
	require.PanicsWithValue(t, "ratelimit: TokenBucket.WaitN with n = -1; n must be at least 1", func() { _ = b.WaitN(context.Background(), -1) })
	require.PanicsWithValue(t, "ratelimit: TokenBucket.Take with n = 0; n must be at least 1", func() { b.Take(0) })
	require.PanicsWithValue(t, "ratelimit: TokenBucket.SetRate with rate -2; the rate must be above 0", func() { b.SetRate(-2) })
	require.PanicsWithValue(t, "ratelimit: TokenBucket.SetBurst with burst 0; the burst must be at least 1", func() { b.SetBurst(0) })
	require.PanicsWithValue(t, "ratelimit: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_ = b.Wait(nil)
	})
	require.True(t, b.Allow(), "a recovered misuse changed the bucket")
}

// TestHammerTokenBucket: waiters and Allow callers with random cancellation,
// and callers of AllowNAt with times up to three hours stale. The state only
// moves forward, as each goroutine sees it; afterwards nobody is left
// waiting, nothing was over-issued, and the bucket refills.
func TestHammerTokenBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rate, burst = 1000.0, 5
		b := NewTokenBucket(rate, burst)
		start := time.Now()
		var granted atomic.Int64
		var wg sync.WaitGroup
		for g := range 32 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 2))
				seen := int64(math.MinInt64) // the tat this goroutine last saw
				for range testutil.HammerRounds(50) {
					if tat := b.state.Load() >> tbShift; tat < seen {
						t.Errorf("the state went back by %v", time.Duration(seen-tat))
					} else {
						seen = tat
					}
					n := 1 + r.IntN(burst)
					if r.IntN(4) == 0 {
						ok := false
						if r.IntN(3) == 0 {
							// Stale: a time read long ago, or replayed.
							ok = b.AllowNAt(n, time.Now().Add(-time.Duration(r.Int64N(int64(3*time.Hour)))))
						} else {
							ok = b.AllowN(n)
						}
						if ok {
							granted.Add(int64(n))
						}
						time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
						continue
					}
					ctx, cancel := context.WithTimeout(t.Context(), time.Duration(r.IntN(20))*time.Millisecond)
					if err := b.WaitN(ctx, n); err == nil {
						granted.Add(int64(n))
					} else if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("WaitN = %v", err)
					}
					cancel()
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start).Seconds()
		require.LessOrEqual(t, float64(granted.Load()), burst+rate*elapsed)
		time.Sleep(time.Second)
		require.True(t, b.AllowN(burst), "left with waiters or debt")
	})
}

// TestHammerTokenBucketSet: waiters with random cancellation and deadlines
// while the burst and the rate move up and down, to no limit and beyond the
// clock's, turning away queued waiters, and settings out of range are refused.
// Afterwards the queue's accounting is back at zero and the bucket refills to
// its burst.
func TestHammerTokenBucketSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const burst = 5
		b := NewTokenBucket(1000, burst)
		stop := make(chan struct{})
		setter := make(chan struct{})
		go func() {
			defer close(setter)
			for i := 0; ; i++ {
				select {
				case <-stop:
					b.SetBurst(burst)
					b.SetRate(1000)
					return
				case <-time.After(3 * time.Millisecond):
					switch {
					case i%7 == 3:
						// Settings refused: nothing changes, and the
						// waiters go on as they were.
						rate, burst := b.Rate(), b.Burst()
						for _, set := range []func(){
							func() { b.SetRate(1e-300) }, func() { b.SetRate(math.NaN()) },
							func() { b.SetBurst(math.MaxInt) }, func() { b.SetBurst(0) },
						} {
							assert.Panics(t, set)
						}
						assert.Equal(t, rate, b.Rate())
						assert.Equal(t, burst, b.Burst())
					case i%11 == 5:
						b.SetRate(math.Inf(1)) // serves every waiter at once
					case i%13 == 6:
						b.SetRate(2e9) // kept as 1e9
					case i%17 == 8:
						b.SetRate(4e-8) // near the slowest allowed: deadlines out of reach
					case i%2 == 0:
						b.SetBurst(2 + i%(burst-1))
					default:
						b.SetRate(float64(250 * (1 + i%5)))
					}
				}
			}
		}()
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 5))
				for range testutil.HammerRounds(50) {
					// Deadlines on the setter's beat, so that some end as
					// a setter turns their waiter away.
					ctx, cancel := context.WithTimeout(t.Context(), time.Duration(3*r.IntN(7))*time.Millisecond)
					err := b.WaitN(ctx, 1+r.IntN(burst))
					cancel()
					if err != nil && !errors.Is(err, context.DeadlineExceeded) &&
						!errors.Is(err, ErrExceedsBurst) && !errors.Is(err, ErrWouldExceedDeadline) {
						t.Errorf("WaitN = %v", err)
					}
				}
			})
		}
		wg.Wait()
		close(stop)
		<-setter
		b.w.q.Lock()
		queued, waiting := b.w.queued, b.w.q.Len()
		b.w.q.Unlock()
		require.Zero(t, queued, "events still counted as asked for")
		require.Zero(t, waiting)
		time.Sleep(time.Second)
		require.True(t, b.AllowN(burst), "left with waiters or debt")
	})
}
