package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// windowed is what the two sliding windows share.
type windowed interface {
	Taker
	Allow() bool
	Wait(ctx context.Context) error
}

var windowKinds = []struct {
	name  string
	new   func(limit int, window time.Duration) windowed
	exact bool
}{
	{"SlidingWindow", func(l int, w time.Duration) windowed { return NewSlidingWindow(l, w) }, true},
	{"SlidingWindowCounter", func(l int, w time.Duration) windowed { return NewSlidingWindowCounter(l, w) }, false},
}

// checkWindows fails if some interval [t, t+window) holds more than limit of
// the sorted grant times.
func checkWindows(t *testing.T, grants []time.Duration, limit int, window time.Duration) {
	t.Helper()
	slices.Sort(grants)
	for i := range grants {
		if j := i + limit; j < len(grants) && grants[j]-grants[i] < window {
			t.Fatalf("%d grants in [%v, %v), limit %d", limit+1, grants[i], grants[i]+window, limit)
		}
	}
}

// TestSlidingWindowExact: random arrivals from many goroutines; every interval
// of one window holds at most limit grants.
func TestSlidingWindowExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, window = 7, time.Second
		s := NewSlidingWindow(limit, window)
		start := time.Now()
		var mu sync.Mutex
		var grants []time.Duration
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 3))
				for range testutil.HammerRounds(100) {
					time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond)
					if n := 1 + r.IntN(3); s.AllowN(n) {
						mu.Lock()
						for range n {
							grants = append(grants, time.Since(start))
						}
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		checkWindows(t, grants, limit, window)
		require.Greater(t, len(grants), limit*10, "too few grants to mean anything")
	})
}

// TestSlidingWindowWaiters: waiters are let in as soon as the limit allows,
// and every interval holds at most limit.
func TestSlidingWindowWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSlidingWindow(3, time.Second)
		start := time.Now()
		done := make([]time.Duration, 7)
		var wg sync.WaitGroup
		for i := range 7 {
			wg.Go(func() {
				assert.NoError(t, s.Wait(t.Context()))
				done[i] = time.Since(start)
			})
			synctest.Wait()
		}
		wg.Wait()
		require.Equal(t, []time.Duration{0, 0, 0, time.Second, time.Second, time.Second, 2 * time.Second}, done)
	})
}

func TestWindowBasics(t *testing.T) {
	for _, k := range windowKinds {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := k.new(3, time.Second)
				require.True(t, w.AllowN(2))
				require.True(t, w.Allow())
				require.False(t, w.Allow())
				d := w.Take(1)
				require.False(t, d.Allowed)
				require.Equal(t, 3, d.Limit)
				require.Equal(t, time.Second, d.Window)
				require.Equal(t, 0, d.Remaining)
				require.Greater(t, d.RetryAfter, time.Duration(0))
				require.Equal(t, time.Duration(-1), w.Take(4).RetryAfter)
				time.Sleep(2 * time.Second)
				d = w.Take(1)
				require.True(t, d.Allowed, "allowed again after the window passed")
				require.Equal(t, 2, d.Remaining)
			})
		})
	}
}

func TestWindowWaitErrors(t *testing.T) {
	for _, k := range windowKinds {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := k.new(2, time.Second)
				require.Equal(t, ErrExceedsBurst, w.WaitN(t.Context(), 3))
				require.Equal(t, context.Canceled, w.Wait(testutil.Cancelled()))
				require.True(t, w.AllowN(2), "a failed Wait took something")
				ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
				defer cancel()
				start := time.Now()
				err := w.WaitN(ctx, 2)
				require.True(t, errors.Is(err, context.DeadlineExceeded), "WaitN = %v", err)
				if k.exact {
					require.Equal(t, ErrWouldExceedDeadline, err)
					require.Zero(t, time.Since(start), "slept before giving up")
				}
			})
		})
	}
}

// TestWindowCancelWhileWaiting: the waiter behind one that gives up moves up.
func TestWindowCancelWhileWaiting(t *testing.T) {
	for _, k := range windowKinds {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := k.new(2, time.Second)
				require.True(t, w.AllowN(2))
				ctx, cancel := context.WithCancel(t.Context())
				first := make(chan error)
				go func() { first <- w.WaitN(ctx, 2) }()
				synctest.Wait()
				start := time.Now()
				second := make(chan time.Duration)
				go func() {
					assert.NoError(t, w.WaitN(t.Context(), 1))
					second <- time.Since(start)
				}()
				synctest.Wait()
				require.False(t, w.Allow(), "a newcomer overtook the waiters")
				cancel()
				require.Equal(t, context.Canceled, <-first)
				// The exact window frees a slot after one window; the
				// counter, whose previous window weighs less and less, once
				// the two events of the first window weigh less than one.
				want := time.Second
				if !k.exact {
					want = 1500 * time.Millisecond
				}
				require.Equal(t, want, <-second, "the second waiter waited for the first's events")
			})
		})
	}
}

// TestSlidingWindowCounterApproximates: steady traffic at the limit is allowed,
// about limit per window, never far above.
func TestSlidingWindowCounterApproximates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, window = 100, time.Second
		c := NewSlidingWindowCounter(limit, window)
		start := time.Now()
		var grants []time.Duration
		for range 5000 {
			time.Sleep(window / 200) // twice the limit's rate
			if c.Allow() {
				grants = append(grants, time.Since(start))
			}
		}
		// Over 25s at twice the rate, about the limit's worth goes through.
		require.InDelta(t, 25*limit, len(grants), 0.05*25*limit)
		// No interval holds much more than the limit.
		for i := range grants {
			j := i
			for j < len(grants) && grants[j]-grants[i] < window {
				j++
			}
			require.LessOrEqual(t, j-i, limit+limit/10, "interval from %v", grants[i])
		}
	})
}

func TestWindowMisuse(t *testing.T) {
	require.PanicsWithValue(t, "ratelimit: NewSlidingWindow with limit 0; the limit must be at least 1",
		func() { NewSlidingWindow(0, time.Second) })
	require.PanicsWithValue(t, "ratelimit: NewSlidingWindow with window 0s; the window must be above 0",
		func() { NewSlidingWindow(1, 0) })
	require.PanicsWithValue(t, "ratelimit: NewSlidingWindowCounter with window -1s; the window must be above 0",
		func() { NewSlidingWindowCounter(1, -time.Second) })
	require.PanicsWithValue(t, "ratelimit: NewSlidingWindowCounter with limit -1; the limit must be at least 1",
		func() { NewSlidingWindowCounter(-1, time.Second) })
	s := NewSlidingWindow(1, time.Second)
	require.PanicsWithValue(t, "ratelimit: SlidingWindow.AllowN with n = 0; n must be at least 1", func() { s.AllowN(0) })
	require.PanicsWithValue(t, "ratelimit: SlidingWindow.WaitN with n = 0; n must be at least 1", func() { _ = s.WaitN(context.Background(), 0) })
	c := NewSlidingWindowCounter(1, time.Second)
	require.PanicsWithValue(t, "ratelimit: SlidingWindowCounter.Take with n = 0; n must be at least 1", func() { c.Take(0) })
}

// TestHammerWindows: waiters and Allow callers with random cancellation; the
// exact window holds its limit in every interval. With a window near
// math.MaxInt64, whose waits saturate, exactly limit events are allowed in
// all, and the waiters, which never get anything, all leave.
func TestHammerWindows(t *testing.T) {
	for _, k := range windowKinds {
		for _, window := range []time.Duration{100 * time.Millisecond, math.MaxInt64} {
			t.Run(fmt.Sprintf("%s/window=%v", k.name, window), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { hammerWindow(t, k.new, k.exact, window) })
			})
		}
	}
}

func hammerWindow(t *testing.T, newWindow func(int, time.Duration) windowed, exact bool, window time.Duration) {
	const limit = 5
	huge := window == math.MaxInt64
	w := newWindow(limit, window)
	start := time.Now()
	var mu sync.Mutex
	var grants []time.Duration
	var count atomic.Int64
	var wg sync.WaitGroup
	for g := range 24 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 4))
			for range testutil.HammerRounds(50) {
				n := 1 + r.IntN(limit)
				ok := false
				var pause time.Duration
				switch r.IntN(4) {
				case 0:
					ok = w.AllowN(n)
					pause = time.Duration(r.IntN(5)) * time.Millisecond
				case 1:
					// No deadline to fail fast on: it queues, and its
					// ctx ends while it waits, or as it is served.
					ctx, cancel := context.WithCancel(t.Context())
					stop := time.AfterFunc(time.Duration(r.IntN(300))*time.Millisecond, cancel)
					err := w.WaitN(ctx, n)
					stop.Stop()
					cancel()
					ok = err == nil
					if err != nil && err != context.Canceled {
						t.Errorf("WaitN = %v", err)
					}
				default:
					ctx, cancel := context.WithTimeout(t.Context(), time.Duration(r.IntN(300))*time.Millisecond)
					err := w.WaitN(ctx, n)
					cancel()
					ok = err == nil
					if err != nil && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("WaitN = %v", err)
					}
				}
				if ok { // record the time of the grant, before any pause
					checkRuns(t, w, limit)
					count.Add(int64(n))
					mu.Lock()
					for range n {
						grants = append(grants, time.Since(start))
					}
					mu.Unlock()
				}
				time.Sleep(pause)
			}
		})
	}
	wg.Wait()
	if exact {
		checkWindows(t, grants, limit, window)
	}
	if huge {
		require.LessOrEqual(t, count.Load(), int64(limit))
		require.Positive(t, count.Load())
		d := w.Take(1)
		require.False(t, d.Allowed)
		require.Positive(t, d.RetryAfter)
		// Not refused for waiters left behind: with none, what is left is
		// there at once.
		if left := limit - int(count.Load()); left > 0 {
			require.True(t, w.AllowN(left), "left with waiters")
		}
		return
	}
	require.Greater(t, count.Load(), int64(limit))
	time.Sleep(time.Second)
	require.True(t, w.AllowN(limit), "left with waiters")
	if s, ok := w.(*SlidingWindow); ok {
		// All but the last grant left the window: the ring shrank.
		s.w.q.Lock()
		defer s.w.q.Unlock()
		require.Equal(t, 1, s.rlen)
		require.Len(t, s.runs, minRuns)
	}
}

// checkRuns checks that a SlidingWindow keeps no more runs of grants than
// limit, the most there can be in a window, in a ring no more than twice
// their number (or minRuns).
func checkRuns(t *testing.T, w windowed, limit int) {
	s, ok := w.(*SlidingWindow)
	if !ok {
		return
	}
	s.w.q.Lock()
	defer s.w.q.Unlock()
	if s.rlen > limit || len(s.runs) > max(minRuns, 2*limit) || s.total-s.first < int64(s.rlen) {
		t.Errorf("%d runs of %d grants kept in a ring of %d; the limit is %d", s.rlen, s.total-s.first, len(s.runs), limit)
	}
}

// TestSlidingWindowStaleTime: a caller that read the clock before another
// took the lock decides with its older time, but its events are dated no
// earlier than the newest: dated in the past, they would leave the window too
// soon, and let more than limit events into one window.
func TestSlidingWindowStaleTime(t *testing.T) {
	s := NewSlidingWindow(2, 10)
	require.True(t, s.allowAt(1, 100))
	require.True(t, s.allowAt(1, 91), "a caller that read the clock at 91")
	// Both happened at 100 or later: no room until 110.
	require.False(t, s.allowAt(1, 102))
	require.False(t, s.allowAt(2, 109))
	require.True(t, s.allowAt(2, 110))
}
