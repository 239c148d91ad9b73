package redislimit

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestZeroValues: the zero Limiter and the zero Handle panic at first use,
// saying what to use, rather than dereferencing nil in a goroutine.
func TestZeroValues(t *testing.T) {
	ctx := context.Background()
	const useNew = "redislimit: use New; the zero Limiter is not usable"
	var l Limiter
	require.PanicsWithValue(t, useNew, func() { _, _ = l.TakeContext(ctx, "k", 1) })
	require.PanicsWithValue(t, useNew, func() { l.Take("k", 1) })
	require.PanicsWithValue(t, useNew, func() { _ = l.WaitN(ctx, "k", 1) })
	require.PanicsWithValue(t, useNew, func() { _ = l.Reset(ctx, "k") })
	require.PanicsWithValue(t, useNew, func() { l.For("k") })
	require.PanicsWithValue(t, useNew, func() { l.Key("k") })
	require.Zero(t, l.Failures())

	const useFor = "redislimit: use Limiter.For; the zero Handle is not usable"
	var h Handle
	require.PanicsWithValue(t, useFor, func() { h.AllowN(1) })
	require.PanicsWithValue(t, useFor, func() { h.Take(1) })
	require.PanicsWithValue(t, useFor, func() { _ = h.WaitN(ctx, 1) })
}

// panicky is a client hook that panics, while armed, on the script's
// commands, lone or in pipelines.
type panicky struct{ armed atomic.Bool }

func (p *panicky) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *panicky) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if p.armed.Load() && (strings.HasPrefix(cmd.Name(), "eval") || cmd.Name() == "del") {
			panic("hook")
		}
		return next(ctx, cmd)
	}
}

func (p *panicky) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if p.armed.Load() && strings.HasPrefix(cmds[0].Name(), "eval") {
			panic("hook")
		}
		return next(ctx, cmds)
	}
}

// TestClientPanics: a client hook that panics leaves the Limiter whole (no
// round trip's place kept), and the panic reaches the caller whose call ran
// it, whether the call ran in the caller's goroutine, in one of its own, or in
// a pipeline with others.
func TestClientPanics(t *testing.T) {
	b := backends(t)[0]
	ctx := context.Background()
	for _, fast := range []bool{false, true} {
		for _, cancellable := range []bool{false, true} {
			c := redis.NewClient(&redis.Options{Addr: b.addr, MaxRetries: -1, ContextTimeoutEnabled: fast})
			defer c.Close()
			p := new(panicky)
			c.AddHook(p)
			l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 10, MaxRoundTrips: 1})
			callCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			if !cancellable {
				callCtx = ctx
			}
			p.armed.Store(true)
			require.PanicsWithValue(t, "hook", func() { _, _ = l.TakeContext(callCtx, "k", 1) }, "fast %v, cancellable %v", fast, cancellable)
			require.PanicsWithValue(t, "hook", func() { _ = l.Reset(callCtx, "k") }, "fast %v, cancellable %v", fast, cancellable)
			p.armed.Store(false)
			require.Eventually(t, func() bool { return l.underway() == 0 }, 5*time.Second, time.Millisecond,
				"a round trip's place was kept")
			d, err := l.TakeContext(ctx, "k", 1)
			require.NoError(t, err)
			require.True(t, d.Allowed)
		}
	}

	// In a pipeline: every caller it carried gets the panic.
	c := b.client(t)
	p := new(panicky)
	c.AddHook(p) // before the gate: the lone run passes it, then waits
	g := newGate(c)
	l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 10, MaxRoundTrips: 1})
	first := make(chan any)
	go func() {
		defer func() { first <- recover() }()
		_, _ = l.TakeContext(ctx, "k", 1)
	}()
	require.Eventually(t, func() bool { return g.heldRuns() == 1 }, 5*time.Second, time.Millisecond)
	var wg sync.WaitGroup
	const queued = 3
	panics := make(chan any, queued)
	for i := range queued {
		wg.Go(func() {
			defer func() { panics <- recover() }()
			_, _ = l.TakeContext(ctx, "k", 1)
		})
		require.Eventually(t, func() bool { return l.queued() == i+1 }, 5*time.Second, time.Millisecond)
	}
	p.armed.Store(true) // the lone run is past the hook, held at the gate
	close(g.open)
	require.Nil(t, <-first)
	wg.Wait()
	for range queued {
		require.Equal(t, "hook", <-panics)
	}
	p.armed.Store(false)
	require.Eventually(t, func() bool { return l.underway() == 0 }, 5*time.Second, time.Millisecond,
		"a pipeline's place was kept")
	d, err := l.TakeContext(ctx, "k", 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
}

func (l *Limiter) underway() int {
	l.batch.mu.Lock()
	defer l.batch.mu.Unlock()
	return l.batch.underway
}

// TestStateCorrupt: a key's state that the script did not write (another
// program's, or a time far ahead, as a server's clock set back leaves) never
// blocks the key for longer than an empty bucket would, nor breaks the
// script: a number too far ahead counts as an empty bucket, anything else not
// a number as a full one.
func TestStateCorrupt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		l := newLimiter(t, Config{Client: c, Rate: 10, Burst: 2, Prefix: b.prefix})
		ctx := context.Background()
		for _, v := range []string{"1e300", "99999999999999999999", "inf", "-inf", "nan", "-5", "abc", ""} {
			require.NoError(t, c.Set(ctx, l.Key("c"), v, time.Minute).Err())
			d, err := l.TakeContext(ctx, "c", 1)
			require.NoError(t, err, "state %q", v)
			if !d.Allowed {
				require.Zero(t, d.Remaining, "state %q", v)
				require.Greater(t, d.RetryAfter, time.Duration(0), "state %q", v)
				require.LessOrEqual(t, d.RetryAfter, 100*time.Millisecond, "state %q: longer than an empty bucket", v)
				require.LessOrEqual(t, d.ResetAfter, 200*time.Millisecond, "state %q: longer than an empty bucket", v)
			}
		}
	})
}

// TestDecodeExtremes: a reply out of the script's range still makes a sane
// Decision.
func TestDecodeExtremes(t *testing.T) {
	l := newLimiter(t, Config{Client: backends(t)[0].client(t), Rate: 10, Burst: 2})
	for _, v := range []int64{math.MinInt64, math.MinInt64 + 1, -1 << 53, 1 << 53, math.MaxInt64} {
		d := l.decode(v, 1)
		require.GreaterOrEqual(t, d.Remaining, 0, "reply %d", v)
		require.LessOrEqual(t, d.Remaining, 2, "reply %d", v)
		require.LessOrEqual(t, d.RetryAfter, 200*time.Millisecond, "reply %d", v)
		require.LessOrEqual(t, d.ResetAfter, 200*time.Millisecond, "reply %d", v)
		require.GreaterOrEqual(t, d.ResetAfter, time.Duration(0), "reply %d", v)
		if !d.Allowed {
			require.Positive(t, d.RetryAfter, "reply %d", v)
		}
	}
}

// TestConfigExtremes: New refuses every Config field's bad extremes, and a
// Limiter of each good extreme decides, with Redis up and with Redis down.
func TestConfigExtremes(t *testing.T) {
	c := backends(t)[0].client(t)
	inf, nan := math.Inf(1), math.NaN()
	for _, cfg := range []Config{
		{Rate: nan, Burst: 1}, {Rate: inf, Burst: 1}, {Rate: -inf, Burst: 1}, {Rate: 5e-324, Burst: 1},
		{Rate: 1, Burst: -1}, {Rate: 1, Burst: math.MinInt}, {Rate: 1e6, Burst: math.MaxInt},
		{Rate: 1, Burst: 1, Timeout: math.MinInt64},
		{Rate: 1, Burst: 1, LocalShare: nan}, {Rate: 1, Burst: 1, LocalShare: inf}, {Rate: 1, Burst: 1, LocalShare: -inf},
		{Rate: 1, Burst: 1, LocalShare: -0.1}, {Rate: 1, Burst: 1, LocalShare: 1.0000001},
		{Rate: 1, Burst: 1, Policy: -1}, {Rate: 1, Burst: 1, MaxRoundTrips: math.MinInt},
	} {
		cfg.Client = c
		l, err := New(cfg)
		require.Nil(t, l, "%+v", cfg)
		require.ErrorContains(t, err, "redislimit: bad Config: ", "%+v", cfg)
	}

	gone := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer gone.Close()
	ctx := context.Background()
	key := 0
	for _, cfg := range []Config{
		{Rate: math.MaxFloat64, Burst: 1},
		{Rate: 1e6, Burst: 1 << 47},
		{Rate: 1e6, Burst: 1 << 47, LocalShare: 1e-9},
		{Rate: 1 / (4 * 365 * 24 * 3600.0), Burst: 1},
		{Rate: 1, Burst: 1, Timeout: math.MaxInt64},
		{Rate: 1, Burst: 1, Timeout: 1},
		{Rate: 1, Burst: 1, MaxRoundTrips: math.MaxInt},
		{Rate: 1, Burst: 1, Prefix: "{}"},
		{Rate: 1, Burst: 1, LocalShare: math.SmallestNonzeroFloat64}, // FailLocal only checks it
	} {
		for _, p := range []Policy{FailOpen, FailClosed, FailLocal} {
			if p == FailLocal && cfg.LocalShare == math.SmallestNonzeroFloat64 {
				continue
			}
			cfg.Policy = p
			cfg.Client = c
			up := cfg
			if up.Timeout == 0 {
				up.Timeout = 10 * time.Second // miniredis under the race detector
			}
			l, err := New(up)
			require.NoError(t, err, "%+v", cfg)
			key++
			k := strconv.Itoa(key) // miniredis's clock stands still
			d, err := l.TakeContext(ctx, k, 1)
			if cfg.Timeout != 1 {
				require.NoError(t, err, "%+v", cfg)
				require.True(t, d.Allowed, "%+v", cfg)
			}
			cfg.Client = gone
			l, err = New(cfg)
			require.NoError(t, err, "%+v", cfg)
			d, err = l.TakeContext(ctx, k, 1)
			require.ErrorIs(t, err, ErrUnavailable, "%+v", cfg)
			require.Equal(t, p != FailClosed, d.Allowed, "%+v", cfg)
			short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			err = l.WaitN(short, k, 1)
			cancel()
			if p == FailClosed {
				require.ErrorIs(t, err, context.DeadlineExceeded, "%+v", cfg)
			}
		}
	}
}

// TestWaitNNilCtxAboveBurst: WaitN checked n against the burst before it
// looked at ctx, and so returned ErrExceedsBurst for a nil ctx rather than
// panic, as every blocking call does (and ratelimit's WaitN). A done ctx
// fails with its error before the burst is looked at, as in ratelimit.
func TestWaitNNilCtxAboveBurst(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	l, err := New(Config{Client: c, Rate: 1, Burst: 1})
	require.NoError(t, err)
	var nilCtx context.Context
	for _, n := range []int{1, 2} {
		require.PanicsWithValue(t, "redislimit: nil Context", func() { _ = l.WaitN(nilCtx, "k", n) }, "n = %d", n)
		require.PanicsWithValue(t, "redislimit: nil Context", func() { _ = l.For("k").WaitN(nilCtx, n) }, "n = %d", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.Equal(t, context.Canceled, l.WaitN(ctx, "k", 2))
}
