package redislimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The tests of this file break a redis-server of their own (stop it, restart
// it), so that the other tests' server is left alone. They use the real clock,
// briefly, and skip when no redis-server is on the PATH.

// ownRedis starts a redis-server for the test alone, or skips the test.
func ownRedis(t *testing.T) *redisProcess {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("needs a redis-server of its own to break")
	}
	return startRedis(t, freePort(t))
}

// pause stops the server with SIGSTOP: it keeps its connections and answers
// nothing, as a server stalled by a fork or a long command. It resumes when
// the test ends, if the test has not resumed it.
func (p *redisProcess) pause(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGSTOP))
	t.Cleanup(p.resume)
}

// resume undoes pause.
func (p *redisProcess) resume() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// inFlight is a client hook that counts the commands of the script (lone or
// in pipelines) under way, and the most ever under way at once.
type inFlight struct {
	now, most, total atomic.Int64
}

func countInFlight(c redis.UniversalClient) *inFlight {
	f := new(inFlight)
	c.AddHook(f)
	return f
}

func (f *inFlight) start() {
	n := f.now.Add(1)
	f.total.Add(1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			return
		}
	}
}

func (f *inFlight) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *inFlight) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); strings.HasPrefix(name, "eval") || name == "del" {
			f.start()
			defer f.now.Add(-1)
		}
		return next(ctx, cmd)
	}
}

func (f *inFlight) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if name := cmds[0].Name(); strings.HasPrefix(name, "eval") || name == "del" {
			f.start()
			defer f.now.Add(-1)
		}
		return next(ctx, cmds)
	}
}

// fastClient is a client of p that gives up at a context's deadline.
func fastClient(t *testing.T, p *redisProcess) redis.UniversalClient {
	c := redis.NewClient(&redis.Options{Addr: p.addr, DialTimeout: time.Second, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestFailLocalUnbuildableShareRejected: New refuses a LocalShare whose
// in-process bucket could not be built (it panicked at the first outage) or
// would overflow (and allow everything); a share just within reach works
// through an outage without panicking.
func TestFailLocalUnbuildableShareRejected(t *testing.T) {
	c := backends(t)[0].client(t)
	month := 30 * 24 * time.Hour
	for _, cfg := range []Config{
		{Rate: 1 / month.Seconds(), Burst: 1, LocalShare: 0.01},
		{Rate: 1, Burst: 1, LocalShare: 1e-9},
		{Rate: 1e-5, Burst: 1, LocalShare: 1e-4},
		{Rate: 100, Burst: 1000, LocalShare: 1e-300},
		{Rate: 1, Burst: 1, LocalShare: 1e-12},
		{Rate: 1, Burst: 1, LocalShare: 5e-324},
	} {
		cfg.Client, cfg.Policy = c, FailLocal
		l, err := New(cfg)
		require.Nil(t, l, "rate %v, share %v", cfg.Rate, cfg.LocalShare)
		require.ErrorContains(t, err, "redislimit: bad Config: LocalShare", "rate %v, share %v", cfg.Rate, cfg.LocalShare)
	}
	// Another Policy never builds the bucket: the share does not matter.
	_, err := New(Config{Client: c, Rate: 1, Burst: 1, LocalShare: 1e-300})
	require.NoError(t, err)

	srv := ownRedis(t)
	l := newLimiter(t, Config{Client: backend{addr: srv.addr}.client(t), Rate: 1 / month.Seconds(), Burst: 1,
		LocalShare: 0.5, Policy: FailLocal, Timeout: 100 * time.Millisecond})
	srv.stop()
	d, err := l.TakeContext(context.Background(), "monthly", 1)
	require.ErrorIs(t, err, ErrUnavailable)
	require.True(t, d.Allowed, "the local bucket starts full")
	for range 100 {
		d, err = l.TakeContext(context.Background(), "monthly", 1)
		require.ErrorIs(t, err, ErrUnavailable)
		require.False(t, d.Allowed, "the local bucket allowed more than its burst")
	}
}

// TestFailLocalSmallShareLimits: a small share, with Redis down, allows its
// share and no more (an overflowing bucket allowed every call).
func TestFailLocalSmallShareLimits(t *testing.T) {
	srv := ownRedis(t)
	l := newLimiter(t, Config{Client: backend{addr: srv.addr}.client(t), Rate: 100, Burst: 1000,
		LocalShare: 1e-6, Policy: FailLocal, Timeout: 100 * time.Millisecond})
	srv.stop()
	allowed := 0
	for range 200 {
		d, err := l.TakeContext(context.Background(), "k", 1)
		require.ErrorIs(t, err, ErrUnavailable)
		if d.Allowed {
			allowed++
		}
	}
	require.Equal(t, 1, allowed, "a local burst of 1")
}

// TestMaxRoundTripsHoldsWhileStalled: a round trip that its caller stopped
// waiting for keeps its place until it ends, so that a stalled server never
// has more than MaxRoundTrips round trips of the Limiter under way.
func TestMaxRoundTripsHoldsWhileStalled(t *testing.T) {
	srv := ownRedis(t)
	for _, fast := range []bool{false, true} {
		name := map[bool]string{false: "client-timeouts", true: "ContextTimeoutEnabled"}[fast]
		t.Run(name, func(t *testing.T) {
			c := backend{addr: srv.addr}.client(t)
			if fast {
				c = fastClient(t, srv)
			}
			f := countInFlight(c)
			l := newLimiter(t, Config{Client: c, Rate: 1e6, Burst: 1000, MaxRoundTrips: 1, Timeout: 20 * time.Millisecond})
			// Warm: a connection made, the script loaded. Asked again while
			// it fails: a loaded machine misses a 20 ms Timeout now and then.
			require.Eventually(t, func() bool {
				_, err := l.TakeContext(context.Background(), "warm", 1)
				return err == nil
			}, 10*time.Second, time.Millisecond)
			srv.pause(t)
			failed := 0
			for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
				d, err := l.TakeContext(context.Background(), "k", 1)
				require.True(t, d.Allowed, "FailOpen")
				if err != nil {
					failed++
				}
			}
			srv.resume()
			require.Positive(t, failed)
			require.Eventually(t, func() bool { return f.now.Load() == 0 }, 5*time.Second, time.Millisecond)
			require.EqualValues(t, 1, f.most.Load(), "round trips under way at once")
			require.Eventually(t, func() bool {
				_, err := l.TakeContext(context.Background(), "k", 1)
				return err == nil
			}, 5*time.Second, time.Millisecond)
		})
	}
}

// TestResetBounded: Reset gives up at the Timeout, or when ctx ends, as the
// other calls do, whatever the client's own timeouts.
//
// The client waits a minute for a reply, so that a Reset bounded by it
// rather than by its Timeout or ctx (100 ms at most) is told apart by a
// bound of 20 s, which a loaded machine meets; and the first Reset, before
// the stop, is made through a Limiter of a roomy Timeout on the same client
// (its connection and script made ready), which 100 ms did not always give.
func TestResetBounded(t *testing.T) {
	srv := ownRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.addr, DialTimeout: time.Second,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 1, Timeout: 100 * time.Millisecond})
	ctx := context.Background()
	require.NoError(t, newLimiter(t, Config{Client: c, Rate: 1, Burst: 1, Timeout: 10 * time.Second}).Reset(ctx, "k"))
	srv.pause(t)
	const bound = 20 * time.Second

	start := time.Now()
	err := l.Reset(ctx, "k")
	require.ErrorIs(t, err, ErrUnavailable)
	require.Less(t, time.Since(start), bound)

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	require.Equal(t, context.DeadlineExceeded, l.Reset(short, "k"))
	require.Less(t, time.Since(start), bound)

	cancelled, cancel2 := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel2)
	start = time.Now()
	require.Equal(t, context.Canceled, l.Reset(cancelled, "k"))
	require.Less(t, time.Since(start), bound)
	require.Equal(t, context.Canceled, l.Reset(cancelled, "k"), "a done ctx fails at once")

	srv.resume()
	require.Eventually(t, func() bool { return l.Reset(ctx, "k") == nil }, 5*time.Second, time.Millisecond)
}

// TestCancelEndsCall: a ctx cancelled (without a deadline) ends AllowN and
// WaitN at once, even with a client that gives up only at deadlines.
//
// The paused Redis's calls have a Timeout of a minute, and a client that
// waits a minute for a reply (a new connection's handshake waits for its
// ReadTimeout, not the call's deadline), so that a call that missed its
// cancellation is told apart by a bound of 20 s, which a loaded machine
// meets: 1 s against a Timeout of 2 did not leave it room.
func TestCancelEndsCall(t *testing.T) {
	srv := ownRedis(t)
	for _, rt := range []int{1, -1} {
		c := fastClient(t, srv)
		l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 1, Timeout: 2 * time.Second, MaxRoundTrips: rt})
		_, err := l.TakeContext(context.Background(), "warm", 1)
		require.NoError(t, err)
	}
	srv.pause(t)
	for _, rt := range []int{1, -1} {
		c := redis.NewClient(&redis.Options{Addr: srv.addr, DialTimeout: time.Minute, ReadTimeout: time.Minute,
			WriteTimeout: time.Minute, MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = c.Close() })
		l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 1, Timeout: time.Minute, MaxRoundTrips: rt})
		for _, wait := range []bool{false, true} {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			start := time.Now()
			var err error
			if wait {
				err = l.WaitN(ctx, "k", 1)
			} else {
				_, err = l.TakeContext(ctx, "k", 1)
			}
			require.Equal(t, context.Canceled, err, "MaxRoundTrips %d, WaitN %v", rt, wait)
			require.Less(t, time.Since(start), 20*time.Second, "MaxRoundTrips %d, WaitN %v", rt, wait)
		}
	}
}

// TestFailLocalWaitNBacksOff: with Redis down, a WaitN for more than the
// local burst cannot be granted locally; it asks Redis again, backing off,
// until ctx ends, and is granted once Redis is back. FailClosed backs off
// too, and a Timeout of a nanosecond backs off from 10 milliseconds.
//
// The schedule is checked in a synctest bubble, on a client that fails every
// command at once: each ask's time is exact, and the gap before the next is
// the documented backoff (the Timeout, at least 10 ms, then twice as long
// each time up to a second, less up to half of it for jitter; no less than
// the RetryAfter of the Policy's Decision). It counted the asks in 400 ms
// of real time, which a loaded machine's late timers only thin out, and
// whose deadline the first ask could outlast. That Redis back grants the
// waiter is checked on a redis-server stopped and started again, with nothing
// timed but a deadline of minutes.
func TestFailLocalWaitNBacksOff(t *testing.T) {
	t.Run("schedule", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			policy  Policy
			timeout time.Duration
			n       int
		}{
			{"FailLocal above the local burst", FailLocal, 20 * time.Millisecond, 5},
			{"FailClosed", FailClosed, 20 * time.Millisecond, 1},
			{"Timeout of a nanosecond", FailClosed, 1, 1},
			{"Timeout above a second", FailClosed, 1500 * time.Millisecond, 1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { backoffSchedule(t, tc.policy, tc.timeout, tc.n) })
			})
		}
	})

	t.Run("granted once Redis is back", func(t *testing.T) {
		srv := ownRedis(t)
		var attempts atomic.Int64
		l := newLimiter(t, Config{Client: backend{addr: srv.addr}.client(t), Rate: 10, Burst: 10, LocalShare: 0.1,
			Policy: FailLocal, Timeout: 20 * time.Millisecond,
			OnError: func(string, error) { attempts.Add(1) }})
		srv.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- l.WaitN(ctx, "k", 5) }()
		// Failed, and asked again: it waits on through the outage.
		require.Eventually(t, func() bool { return attempts.Load() >= 2 }, time.Minute, time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("WaitN returned %v while Redis was down", err)
		default:
		}
		startRedis(t, srv.port)
		require.NoError(t, <-done)
	})
}

// downHook fails every command at once, as a Redis that refuses
// connections, without a connection.
type downHook struct{ err error }

func (h downHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h downHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		cmd.SetErr(h.err)
		return h.err
	}
}

func (h downHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(_ context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			cmd.SetErr(h.err)
		}
		return h.err
	}
}

// backoffSchedule checks, in a synctest bubble, when a WaitN for n events
// asks a Redis that is down under policy and timeout: each ask is a failure
// told to OnError.
func backoffSchedule(t *testing.T, policy Policy, timeout time.Duration, n int) {
	down := errors.New("down")
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	c.AddHook(downHook{down})
	defer c.Close()
	var mu sync.Mutex
	var at []time.Time
	l, err := New(Config{Client: c, Rate: 10, Burst: 10, LocalShare: 0.1, Policy: policy, Timeout: timeout,
		OnError: func(_ string, err error) {
			if !errors.Is(err, down) {
				t.Errorf("OnError told of %v", err)
			}
			mu.Lock()
			at = append(at, time.Now())
			mu.Unlock()
		}})
	require.NoError(t, err)
	const span = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), span)
	defer cancel()
	start := time.Now()
	require.Equal(t, context.DeadlineExceeded, l.WaitN(ctx, "k", n))
	require.Equal(t, start.Add(span), time.Now(), "WaitN gave up before ctx")

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, at)
	require.Equal(t, start, at[0], "the first ask")
	ceiling := max(time.Second, timeout)
	b := max(timeout, 10*time.Millisecond)
	// The Decision's RetryAfter, while Redis is down: the Timeout, for
	// FailClosed and for more than FailLocal's bucket holds.
	floor := max(timeout, time.Millisecond)
	for i := 1; i < len(at); i++ {
		gap := at[i].Sub(at[i-1])
		lo, hi := max(b/2, floor), max(b, floor)
		if gap < lo || gap > hi {
			t.Fatalf("ask %d came %v after ask %d; want between %v and %v (asks at %v)", i, gap, i-1, lo, hi, offsets(start, at))
		}
		b = min(2*b, ceiling)
	}
	// No ask is missing at the end: the next one was due, at the latest,
	// after ctx ended.
	require.GreaterOrEqual(t, at[len(at)-1].Add(max(b, floor)), start.Add(span), "asks at %v", offsets(start, at))
	t.Logf("%d asks in %v", len(at), span)
}

// offsets says when the first dozen of at came, since start, and how many
// there were.
func offsets(start time.Time, at []time.Time) string {
	out := make([]time.Duration, 0, 12)
	for _, a := range at[:min(len(at), cap(out))] {
		out = append(out, a.Sub(start))
	}
	return fmt.Sprintf("%v, %d in all", out, len(at))
}

// TestFailuresCountsCalls: Failures counts the calls that Redis failed, each
// one, queued or in a pipeline, as OnError hears of them: not round trips.
func TestFailuresCountsCalls(t *testing.T) {
	srv := ownRedis(t)
	c := backend{addr: srv.addr}.client(t)
	f := countInFlight(c)
	var reported atomic.Int64
	l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 1, MaxRoundTrips: 1, Timeout: 100 * time.Millisecond,
		OnError: func(string, error) { reported.Add(1) }})
	_, err := l.TakeContext(context.Background(), "warm", 1)
	require.NoError(t, err)
	srv.pause(t)
	var wg sync.WaitGroup
	const calls = 10
	for range calls {
		wg.Go(func() {
			_, err := l.TakeContext(context.Background(), "k", 1)
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("Allow = %v", err)
			}
		})
	}
	wg.Wait()
	srv.resume()
	require.EqualValues(t, calls, l.Failures())
	require.EqualValues(t, calls, reported.Load())
	require.Eventually(t, func() bool { return f.now.Load() == 0 }, 5*time.Second, time.Millisecond)
	require.Less(t, f.total.Load(), int64(1+calls), "fewer round trips than calls")
}

// TestStateLost: the limit holds only while Redis keeps the state. A key
// deleted, a FLUSHALL or a restart without persistence fills every bucket
// again: a burst more per key, whatever the Policy. The package doc says so.
func TestStateLost(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 2, Prefix: b.prefix, Policy: FailClosed})
		ctx := context.Background()
		take := func() int {
			n := 0
			for range 3 {
				if d, err := l.TakeContext(ctx, "lost", 1); err == nil && d.Allowed {
					n++
				}
			}
			return n
		}
		require.Equal(t, 2, take())
		require.NoError(t, c.Del(ctx, l.Key("lost")).Err())
		require.Equal(t, 2, take(), "a deleted key is a full bucket")
		require.NoError(t, c.FlushAll(ctx).Err())
		require.Equal(t, 2, take(), "FLUSHALL fills every bucket")
	})
	srv := ownRedis(t)
	l := newLimiter(t, Config{Client: backend{addr: srv.addr}.client(t), Rate: 1e-3, Burst: 2, Policy: FailClosed})
	ctx := context.Background()
	for range 2 {
		d, err := l.TakeContext(ctx, "k", 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	srv.stop()
	startRedis(t, srv.port) // without persistence
	require.Eventually(t, func() bool {
		d, err := l.TakeContext(ctx, "k", 1)
		return err == nil && d.Allowed
	}, 5*time.Second, time.Millisecond, "a restart without persistence forgot the bucket")
}

// TestFailLocalKeepsIdleKeys: FailLocal's bucket of a key lives as long as it
// takes to refill, so that an idle key is not forgotten (and full again) while
// it still owes: at one event an hour, a key that waits 15 minutes between
// calls, while other keys come and go, gets no more than its share.
func TestFailLocalKeepsIdleKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := errors.New("down")
		// An address that needs no name lookup: the resolver's state, made
		// in a bubble, would belong to it.
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, down
		}})
		defer func() {
			_ = c.Close()
			time.Sleep(time.Minute) // the pool's background dials give up
		}()
		l, err := New(Config{Client: c, Rate: 1.0 / 3600, Burst: 1, Policy: FailLocal, Timeout: 100 * time.Millisecond})
		require.NoError(t, err)
		ctx := context.Background()
		d, _ := l.TakeContext(ctx, "k", 1)
		require.True(t, d.Allowed)
		for i := range 3 {
			time.Sleep(15 * time.Minute)
			for j := range 200 {
				_, _ = l.TakeContext(ctx, fmt.Sprintf("other%d/%d", i, j), 1)
			}
			d, _ = l.TakeContext(ctx, "k", 1)
			require.False(t, d.Allowed, "after %d minutes", 15*(i+1))
		}
	})
}
