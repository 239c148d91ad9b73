package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// newLimiter returns a Limiter of cfg. Unless cfg sets a Timeout, as the tests
// of timeouts do, it gives Redis seconds to answer rather than the default
// 100 milliseconds, which a loaded machine (the race detector, every package's
// tests at once) can take for a round trip to miniredis.
func newLimiter(t *testing.T, cfg Config) *Limiter {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	l, err := New(cfg)
	require.NoError(t, err)
	return l
}

// forEachBackend runs f against miniredis and, if there is one, a real server.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { f(t, b) })
	}
}

func TestBurstThenRefuse(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l := newLimiter(t, Config{Client: b.client(t), Rate: 10, Burst: 3, Prefix: b.prefix})
		ctx := context.Background()
		for i := range 3 {
			d, err := l.TakeContext(ctx, "user", 1)
			require.NoError(t, err)
			require.True(t, d.Allowed, "event %d", i)
			require.Equal(t, 2-i, d.Remaining)
		}
		d, err := l.TakeContext(ctx, "user", 1)
		require.NoError(t, err)
		require.False(t, d.Allowed)
		require.Equal(t, 3, d.Limit)
		require.Equal(t, 300*time.Millisecond, d.Window)
		require.InDelta(t, float64(100*time.Millisecond), float64(d.RetryAfter), float64(20*time.Millisecond))
		require.InDelta(t, float64(300*time.Millisecond), float64(d.ResetAfter), float64(20*time.Millisecond))

		d, err = l.TakeContext(ctx, "another user", 1)
		require.NoError(t, err)
		require.True(t, d.Allowed, "keys are independent")
		d, _ = l.TakeContext(ctx, "user", 4)
		require.False(t, d.Allowed)
		require.Equal(t, time.Duration(-1), d.RetryAfter, "more than the burst, ever")

		// Even then the Decision tells what the bucket holds; n may be
		// anything.
		_, _ = l.TakeContext(ctx, "big", 1)
		for _, n := range []int{4, math.MaxInt} {
			d, err = l.TakeContext(ctx, "big", n)
			require.NoError(t, err)
			require.False(t, d.Allowed)
			require.Equal(t, 2, d.Remaining, "n = %d", n)
			require.Equal(t, time.Duration(-1), d.RetryAfter, "n = %d", n)
			require.InDelta(t, float64(100*time.Millisecond), float64(d.ResetAfter), float64(20*time.Millisecond), "n = %d", n)
		}
		d, _ = l.TakeContext(ctx, "big", 2)
		require.True(t, d.Allowed, "a refusal takes nothing")

		// A refusal tells what is left, and how long until there is enough.
		_, _ = l.TakeContext(ctx, "partial", 1)
		d, err = l.TakeContext(ctx, "partial", 3)
		require.NoError(t, err)
		require.False(t, d.Allowed)
		require.Equal(t, 2, d.Remaining)
		require.InDelta(t, float64(100*time.Millisecond), float64(d.RetryAfter), float64(20*time.Millisecond))
		require.InDelta(t, float64(100*time.Millisecond), float64(d.ResetAfter), float64(20*time.Millisecond))
	})
}

// TestBurstAtUnevenRates: at a rate whose token is not a whole number of
// microseconds, the whole burst is still allowed at once, one event at a time
// as well as all together.
func TestBurstAtUnevenRates(t *testing.T) {
	m := backends(t)[0]
	m.mini.SetTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) // no refill between calls
	defer m.mini.SetTime(time.Time{})
	ctx := context.Background()
	for _, rate := range []float64{3, 7, 6, 1.0 / 3, 333} {
		for _, burst := range []int{1, 2, 3, 7, 10} {
			l := newLimiter(t, Config{Client: m.client(t), Rate: rate, Burst: burst, Prefix: "uneven:"})
			key := fmt.Sprintf("%v/%d", rate, burst)
			for i := range burst {
				d, err := l.TakeContext(ctx, key+"/singles", 1)
				require.NoError(t, err)
				require.True(t, d.Allowed, "rate %v, burst %d: event %d refused", rate, burst, i+1)
				require.Equal(t, burst-1-i, d.Remaining, "rate %v, burst %d, event %d", rate, burst, i+1)
			}
			d, _ := l.TakeContext(ctx, key+"/singles", 1)
			require.False(t, d.Allowed, "rate %v, burst %d: one past the burst", rate, burst)
			d, _ = l.TakeContext(ctx, key+"/whole", burst)
			require.True(t, d.Allowed, "rate %v, burst %d: the burst at once", rate, burst)
		}
	}
}

// TestRefill drives miniredis's clock: the server's TIME decides, not ours.
func TestRefill(t *testing.T) {
	m := backends(t)[0]
	l := newLimiter(t, Config{Client: m.client(t), Rate: 10, Burst: 2})
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 2 {
		d, _ := l.TakeContext(ctx, "k", 1)
		require.True(t, d.Allowed)
	}
	d, _ := l.TakeContext(ctx, "k", 1)
	require.False(t, d.Allowed)
	require.Equal(t, 100*time.Millisecond, d.RetryAfter)

	m.mini.SetTime(now.Add(99 * time.Millisecond))
	d, _ = l.TakeContext(ctx, "k", 1)
	require.False(t, d.Allowed)
	require.Equal(t, time.Millisecond, d.RetryAfter)
	m.mini.SetTime(now.Add(100 * time.Millisecond))
	d, _ = l.TakeContext(ctx, "k", 1)
	require.True(t, d.Allowed)

	// Over a long stretch, exactly the rate.
	granted := 0
	for ms := 101; ms <= 2_100; ms++ {
		m.mini.SetTime(now.Add(time.Duration(ms) * time.Millisecond))
		if d, _ := l.TakeContext(ctx, "k", 1); d.Allowed {
			granted++
		}
	}
	require.Equal(t, 20, granted)
}

// TestKeyTTL: a key lives as long as its bucket is not full, then vanishes.
func TestKeyTTL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 10, Prefix: b.prefix})
		ctx := context.Background()
		d, _ := l.TakeContext(ctx, "ttl", 3)
		require.True(t, d.Allowed)
		key := l.Key("ttl")
		require.Equal(t, b.prefix+"{ttl}", key, "the key carries a hash tag")
		ttl, err := c.PTTL(ctx, key).Result()
		require.NoError(t, err)
		require.InDelta(t, float64(3*time.Second), float64(ttl), float64(100*time.Millisecond))
		if b.mini != nil {
			b.mini.FastForward(3 * time.Second)
			n, _ := c.Exists(ctx, key).Result()
			require.Zero(t, n, "the key outlived its bucket's refill")
		}
		require.NoError(t, l.Reset(ctx, "ttl"))
		d, _ = l.TakeContext(ctx, "ttl", 10)
		require.True(t, d.Allowed, "Reset filled the bucket")
	})
}

// TestScriptForgotten: after SCRIPT FLUSH the script is sent again.
func TestScriptForgotten(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		l := newLimiter(t, Config{Client: c, Rate: 10, Burst: 5, Prefix: b.prefix})
		ctx := context.Background()
		_, err := l.TakeContext(ctx, "s", 1)
		require.NoError(t, err)
		require.NoError(t, c.ScriptFlush(ctx).Err())
		d, err := l.TakeContext(ctx, "s", 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
		require.Zero(t, l.Failures())
	})
}

func TestWaitN(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		if b.mini != nil {
			b.mini.SetTime(time.Time{}) // miniredis's TIME follows the real clock again
		}
		l := newLimiter(t, Config{Client: b.client(t), Rate: 200, Burst: 1, Prefix: b.prefix})
		ctx := context.Background()
		start := time.Now()
		for range 5 {
			require.NoError(t, l.WaitN(ctx, "w", 1))
		}
		require.GreaterOrEqual(t, time.Since(start), 15*time.Millisecond, "did not wait for the rate")
		require.Equal(t, ratelimit.ErrExceedsBurst, l.WaitN(ctx, "w", 2))

		short, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		l2 := newLimiter(t, Config{Client: b.client(t), Rate: 1, Burst: 1, Prefix: b.prefix})
		require.NoError(t, l2.WaitN(ctx, "slow", 1))
		err := l2.WaitN(short, "slow", 1)
		require.True(t, errors.Is(err, context.DeadlineExceeded), "WaitN = %v", err)

		// A deadline before the next event fails at once, without sleeping
		// until it (which would end in DeadlineExceeded).
		soon, cancel3 := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel3()
		err = l2.WaitN(soon, "slow", 1)
		require.ErrorIs(t, err, ratelimit.ErrWouldExceedDeadline)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var de *ratelimit.DeadlineError
		require.ErrorAs(t, err, &de, "WaitN says how long the wait would be")
		require.Equal(t, "slow", de.Key)
		require.Greater(t, de.Delay, 500*time.Millisecond)

		done, cancel2 := context.WithCancel(ctx)
		cancel2()
		require.Equal(t, context.Canceled, l2.WaitN(done, "slow", 1))
		_, err = l2.TakeContext(done, "slow", 1)
		require.Equal(t, context.Canceled, err)
	})
}

// deadServer returns the address of a server that accepts connections and
// never answers: Redis gone slow.
func deadServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// TestPolicies: Redis slow (accepting, never answering) or gone; every call
// returns within its timeout and decides by the Policy.
//
// The client waits a minute for a reply, so that a call bounded by it
// rather than by its Timeout (50 ms) is told apart by a bound of 20 s,
// which a loaded machine meets (1 s, against the client's default read
// timeout of 3 s, did not leave it room).
func TestPolicies(t *testing.T) {
	for _, down := range []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"slow", deadServer},
		{"gone", func(t *testing.T) string { return "127.0.0.1:" + strconv.Itoa(freePort(t)) }},
	} {
		for _, tc := range []struct {
			policy  Policy
			allowed []bool
		}{
			{FailOpen, []bool{true, true, true}},
			{FailClosed, []bool{false, false, false}},
			{FailLocal, []bool{true, true, false}}, // half of a burst of 4
		} {
			t.Run(down.name+"/"+tc.policy.String(), func(t *testing.T) {
				var reported atomic.Int32
				c := redis.NewClient(&redis.Options{Addr: down.addr(t), DialTimeout: time.Minute,
					ReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxRetries: -1})
				t.Cleanup(func() { _ = c.Close() })
				l := newLimiter(t, Config{
					Client: c, Rate: 1, Burst: 4,
					Timeout: 50 * time.Millisecond, Policy: tc.policy, LocalShare: 0.5,
					OnError: func(key string, err error) { reported.Add(1) },
				})
				for i, want := range tc.allowed {
					start := time.Now()
					d, err := l.TakeContext(context.Background(), "k", 1)
					require.Less(t, time.Since(start), 20*time.Second, "a call hung past its timeout")
					require.True(t, errors.Is(err, ErrUnavailable), "err = %v", err)
					require.Equal(t, want, d.Allowed, "call %d", i)
				}
				// More than the burst: refused whatever the Policy, without
				// a key kept in FailLocal's limiter for it.
				d, err := l.TakeContext(context.Background(), "big", 5)
				require.True(t, errors.Is(err, ErrUnavailable), "err = %v", err)
				require.False(t, d.Allowed)
				require.Equal(t, time.Duration(-1), d.RetryAfter)
				require.Equal(t, int32(4), reported.Load())
				require.Equal(t, int64(4), l.Failures())
				if l.local != nil {
					require.Equal(t, 1, l.local.Len(), "a key kept for a refusal no Policy changes")
				}
			})
		}
	}
}

// TestHandle: a key's handle is a ratelimit.Limiter, and the Limiter a
// ratelimit.KeyTaker for the HTTP middleware.
func TestHandle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		l := newLimiter(t, Config{Client: b.client(t), Rate: 1, Burst: 2, Prefix: b.prefix})
		var h ratelimit.Limiter = l.For("api")
		require.True(t, h.AllowN(2))
		require.False(t, h.AllowN(1))
		var _ ratelimit.Taker = l.For("api")

		mw := ratelimit.Middleware(l, ratelimit.MiddlewareConfig{})(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
		codes := []int{}
		for range 3 {
			w := httptest.NewRecorder()
			mw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
			codes = append(codes, w.Code)
		}
		require.Equal(t, []int{200, 200, 429}, codes)
	})
}

func TestBadInput(t *testing.T) {
	c := backends(t)[0].client(t)
	for _, cfg := range []Config{
		{Rate: 1, Burst: 1},
		{Client: c, Rate: 0, Burst: 1},
		{Client: c, Rate: -1, Burst: 1},
		{Client: c, Rate: 1, Burst: 0},
		{Client: c, Rate: 1, Burst: 1, Timeout: -1},
		{Client: c, Rate: 1, Burst: 1, LocalShare: 2},
		{Client: c, Rate: 1, Burst: 1, Policy: 9},
		{Client: c, Rate: 1, Burst: 1, MaxRoundTrips: -2},
		{Client: c, Rate: 1e-6, Burst: 200}, // 200 million seconds to refill
	} {
		l, err := New(cfg)
		require.Nil(t, l)
		require.ErrorContains(t, err, "redislimit: bad Config: ")
	}
	l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 1})
	ctx := context.Background()
	// The empty key is a key: TestReview12EmptyKeyIsAKey.
	require.PanicsWithValue(t, "redislimit: TakeContext with n = 0; n must be at least 1", func() { _, _ = l.TakeContext(ctx, "k", 0) })
	require.PanicsWithValue(t, "redislimit: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_, _ = l.TakeContext(nil, "k", 1)
	})
}

// TestSharedLimit: against a real server, 8 limiters with clients of their own
// (as 8 machines would have) and 32 goroutines each hammer one key; together
// they never get more than burst + rate × elapsed. The Timeout is long: 256
// goroutines queue for 8 clients' connections, and under the race detector on
// a loaded 2-core machine a call waited more than a second; what is checked
// is the count, not how long a call takes. For the same reason, the floor
// under the count is loose, counts only the time the callers were asking
// (while a loaded machine stops them all for longer than the bucket takes
// to fill, burst/rate, what it refills is lost to them, rightly), and holds
// only when they asked at least twice as often as the rate: a machine too
// loaded for that measures itself, not the limiter.
func TestSharedLimit(t *testing.T) {
	addr := requireRealRedis(t)
	const rate, burst, instances, perInstance = 500.0, 50, 8, 32
	b := backend{addr: addr}
	prefix := "shared" + strconv.Itoa(int(prefixes.Add(1))) + ":"
	var granted, asked atomic.Int64
	duration := 2 * time.Second
	if testing.Short() {
		duration = 500 * time.Millisecond
	}
	fill := time.Duration(burst / rate * float64(time.Second))
	var mu sync.Mutex
	var last time.Time     // the last call's return; guarded by mu
	var idle time.Duration // the time past fill between two returns; guarded by mu
	start := time.Now()
	last = start
	var wg sync.WaitGroup
	for i := range instances {
		// Half the instances pipeline their calls, half send each alone.
		roundTrips := []int{0, -1}[i%2]
		l := newLimiter(t, Config{Client: b.client(t), Rate: rate, Burst: burst, Prefix: prefix,
			Timeout: 30 * time.Second, MaxRoundTrips: roundTrips})
		for range perInstance {
			wg.Go(func() {
				for time.Since(start) < duration {
					d, err := l.TakeContext(context.Background(), "hot", 1)
					asked.Add(1)
					mu.Lock()
					now := time.Now()
					if gap := now.Sub(last); gap > fill {
						idle += gap - fill
					}
					last = now
					mu.Unlock()
					if err == nil && d.Allowed {
						granted.Add(1)
					} else if err != nil {
						t.Errorf("Allow: %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	bound := burst + rate*elapsed
	require.LessOrEqual(t, float64(granted.Load()), bound, "over-issued across instances")
	asking := elapsed - idle.Seconds()
	t.Logf("%d granted of %d asked in %.2fs, %.2fs of it with no call returning for over %v", granted.Load(), asked.Load(), elapsed, idle.Seconds(), fill)
	if float64(asked.Load()) < 2*rate*asking {
		t.Logf("asked less than twice the rate: the floor under the count is not checked")
		return
	}
	require.Greater(t, float64(granted.Load()), 0.5*rate*asking, "under-issued: the limiter is slower than its rate")
}

// TestRedisGoesAndComes: the server stops mid-run; calls follow the policy and
// return within their timeout; it comes back; decisions resume.
func TestRedisGoesAndComes(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs a redis-server of its own to stop and start")
	}
	port := freePort(t)
	srv := startRedis(t, port)
	l := newLimiter(t, Config{
		Client: backend{addr: srv.addr}.client(t), Rate: 1000, Burst: 1000,
		Timeout: 100 * time.Millisecond, Policy: FailClosed,
	})
	ctx := context.Background()
	d, err := l.TakeContext(ctx, "k", 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)

	srv.stop()
	for range 5 {
		start := time.Now()
		d, err := l.TakeContext(ctx, "k", 1)
		require.Less(t, time.Since(start), 20*time.Second, "a call hung while Redis was down")
		require.True(t, errors.Is(err, ErrUnavailable), "err = %v", err)
		require.False(t, d.Allowed, "FailClosed allowed")
	}
	// Many at once, so that calls queue and go in pipelines.
	together := func(check func(d ratelimit.Decision, err error, took time.Duration)) {
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for range 3 {
					start := time.Now()
					d, err := l.TakeContext(ctx, "k", 1)
					check(d, err, time.Since(start))
				}
			})
		}
		wg.Wait()
	}
	together(func(d ratelimit.Decision, err error, took time.Duration) {
		assert.Less(t, took, 20*time.Second, "a call hung while Redis was down")
		assert.ErrorIs(t, err, ErrUnavailable)
		assert.False(t, d.Allowed, "FailClosed allowed")
	})

	startRedis(t, port) // back, on the same address
	require.Eventually(t, func() bool {
		d, err := l.TakeContext(ctx, "k", 1)
		return err == nil && d.Allowed
	}, 10*time.Second, 20*time.Millisecond, "decisions did not resume")
	assert.GreaterOrEqual(t, l.Failures(), int64(5+16*3))
	together(func(d ratelimit.Decision, err error, _ time.Duration) {
		assert.NoError(t, err)
		assert.True(t, d.Allowed)
	})
}
