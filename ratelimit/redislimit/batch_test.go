package redislimit

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// gate is a client hook that holds every lone run of the script until the
// test opens it, and records the pipelines the client sends.
type gate struct {
	open chan struct{}

	// beforePipeline, if set, runs before each pipeline of the script.
	beforePipeline func()
	// holdPipelines makes pipelines of the script wait at the gate too.
	holdPipelines bool

	mu        sync.Mutex
	held      int        // lone runs waiting at the gate
	pipelines [][]string // the command names of each pipeline of the script
}

func newGate(c redis.UniversalClient) *gate {
	g := &gate{open: make(chan struct{})}
	c.AddHook(g)
	return g
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.HasPrefix(cmd.Name(), "eval") {
			g.mu.Lock()
			g.held++
			g.mu.Unlock()
			select {
			case <-g.open:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, cmd := range cmds {
			names[i] = cmd.Name()
		}
		if !strings.HasPrefix(names[0], "eval") {
			return next(ctx, cmds) // the client's own, on a new connection
		}
		if g.beforePipeline != nil {
			g.beforePipeline()
		}
		g.mu.Lock()
		g.pipelines = append(g.pipelines, names)
		g.mu.Unlock()
		if g.holdPipelines {
			select {
			case <-g.open:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return next(ctx, cmds)
	}
}

func (g *gate) heldRuns() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

func (g *gate) sent() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pipelines
}

func (l *Limiter) queued() int {
	l.batch.mu.Lock()
	defer l.batch.mu.Unlock()
	return len(l.batch.queue)
}

// decisions makes n decisions of key at once from goroutines of their own,
// after a first one that g holds, and returns them once g opens: the first
// alone, the others in the pipeline that follows it.
func decisions(t *testing.T, l *Limiter, g *gate, key string, n int) (first ratelimit.Decision, rest []ratelimit.Decision) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	var firstErr error
	wg.Go(func() { first, firstErr = l.TakeContext(ctx, key, 1) })
	require.Eventually(t, func() bool { return g.heldRuns() == 1 }, 5*time.Second, time.Millisecond)
	rest = make([]ratelimit.Decision, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { rest[i], errs[i] = l.TakeContext(ctx, key, 1) })
		// One at a time, so that the pipeline keeps their order.
		require.Eventually(t, func() bool { return l.queued() == i+1 }, 5*time.Second, time.Millisecond)
	}
	close(g.open)
	wg.Wait()
	require.NoError(t, firstErr)
	for _, err := range errs {
		require.NoError(t, err)
	}
	return first, rest
}

// TestPipelined: with its one round trip under way, a Limiter queues the calls
// that come, and sends them in one pipeline, in order, when it ends.
func TestPipelined(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		g := newGate(c)
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 5, Prefix: b.prefix, MaxRoundTrips: 1})
		first, rest := decisions(t, l, g, "p", 7)
		require.True(t, first.Allowed)
		require.Equal(t, 4, first.Remaining)
		for i, d := range rest {
			if i < 4 {
				require.True(t, d.Allowed, "call %d", i)
				require.Equal(t, 3-i, d.Remaining, "call %d", i)
			} else {
				require.False(t, d.Allowed, "call %d", i)
				require.Zero(t, d.Remaining)
				require.Greater(t, d.RetryAfter, time.Duration(0))
			}
		}
		require.Equal(t, [][]string{{"evalsha", "evalsha", "evalsha", "evalsha", "evalsha", "evalsha", "evalsha"}}, g.sent())
		require.Zero(t, l.queued())
		require.Zero(t, l.Failures())
	})
}

// TestPipelineScriptForgotten: calls that a pipeline's EVALSHA failed for
// go again with the script.
func TestPipelineScriptForgotten(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c, other := b.client(t), b.client(t)
		g := newGate(c)
		g.beforePipeline = func() { assert.NoError(t, other.ScriptFlush(context.Background()).Err()) }
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 5, Prefix: b.prefix, MaxRoundTrips: 1})
		first, rest := decisions(t, l, g, "f", 3)
		require.True(t, first.Allowed)
		for i, d := range rest {
			require.True(t, d.Allowed, "call %d", i)
			require.Equal(t, 3-i, d.Remaining, "call %d", i)
		}
		require.Equal(t, [][]string{{"evalsha", "evalsha", "evalsha"}, {"eval", "eval", "eval"}}, g.sent())
		require.Zero(t, l.Failures())
	})
}

// TestQueuedCallGivesUp: a call waiting for a round trip leaves the queue when
// its ctx ends, and is not sent.
func TestQueuedCallGivesUp(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		g := newGate(c)
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 5, Prefix: b.prefix, MaxRoundTrips: 1, Timeout: time.Minute})
		done := make(chan error)
		go func() {
			_, err := l.TakeContext(context.Background(), "q", 1)
			done <- err
		}()
		require.Eventually(t, func() bool { return g.heldRuns() == 1 }, 5*time.Second, time.Millisecond)

		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			_, err := l.TakeContext(ctx, "q", 1)
			done <- err
		}()
		require.Eventually(t, func() bool { return l.queued() == 1 }, 5*time.Second, time.Millisecond)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		require.Zero(t, l.queued())

		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		d, err := l.TakeContext(ctx, "q", 1)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, ratelimit.Decision{}, d)
		require.Zero(t, l.queued())

		close(g.open)
		require.NoError(t, <-done)
		require.Empty(t, g.sent(), "a call that gave up was sent")
		d, err = l.TakeContext(context.Background(), "q", 1)
		require.NoError(t, err)
		require.Equal(t, 3, d.Remaining, "only the first call and this one took events")
		require.Zero(t, l.Failures())
	})
}

// TestQueuedCallTimesOut: the Timeout bounds a call's wait in the queue and in
// its pipeline; the call then follows the Policy.
func TestQueuedCallTimesOut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		g := newGate(c)
		g.holdPipelines = true
		const timeout = 100 * time.Millisecond
		l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 5, Prefix: b.prefix, MaxRoundTrips: 1,
			Timeout: timeout, Policy: FailClosed})
		first := make(chan error)
		go func() {
			_, err := l.TakeContext(context.Background(), "t", 1)
			first <- err
		}()
		require.Eventually(t, func() bool { return g.heldRuns() == 1 }, 5*time.Second, time.Millisecond)
		start := time.Now()
		d, err := l.TakeContext(context.Background(), "t", 1)
		elapsed := time.Since(start)
		require.ErrorIs(t, err, ErrUnavailable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.False(t, d.Allowed, "FailClosed")
		require.GreaterOrEqual(t, elapsed, timeout)
		require.Less(t, elapsed, 10*timeout)
		require.ErrorIs(t, <-first, ErrUnavailable)
		require.EqualValues(t, 2, l.Failures())
		close(g.open)
	})
}

// TestUnboundedRoundTrips: with MaxRoundTrips -1, every call goes at once.
func TestUnboundedRoundTrips(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		g := newGate(c)
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 5, Prefix: b.prefix, MaxRoundTrips: NoLimit, Timeout: time.Minute})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_, err := l.TakeContext(context.Background(), "u", 1)
				assert.NoError(t, err)
			})
		}
		require.Eventually(t, func() bool { return g.heldRuns() == 8 }, 5*time.Second, time.Millisecond)
		require.Zero(t, l.queued())
		close(g.open)
		wg.Wait()
		require.Empty(t, g.sent())
	})
}

// TestPipelinedReset: a Reset made while the round trips are under way waits
// in the queue as the decisions do, and goes in their pipeline, in order.
func TestPipelinedReset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		g := newGate(c)
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 2, Prefix: b.prefix, MaxRoundTrips: 1})
		ctx := context.Background()
		var wg sync.WaitGroup
		wg.Go(func() {
			d, err := l.TakeContext(ctx, "r", 1)
			assert.NoError(t, err)
			assert.True(t, d.Allowed)
		})
		require.Eventually(t, func() bool { return g.heldRuns() == 1 }, 5*time.Second, time.Millisecond)
		var second, third ratelimit.Decision
		wg.Go(func() { second, _ = l.TakeContext(ctx, "r", 1) })
		require.Eventually(t, func() bool { return l.queued() == 1 }, 5*time.Second, time.Millisecond)
		wg.Go(func() { assert.NoError(t, l.Reset(ctx, "r")) })
		require.Eventually(t, func() bool { return l.queued() == 2 }, 5*time.Second, time.Millisecond)
		wg.Go(func() { third, _ = l.TakeContext(ctx, "r", 2) })
		require.Eventually(t, func() bool { return l.queued() == 3 }, 5*time.Second, time.Millisecond)
		close(g.open)
		wg.Wait()
		require.Equal(t, [][]string{{"evalsha", "del", "evalsha"}}, g.sent())
		require.True(t, second.Allowed)
		require.True(t, third.Allowed, "the Reset in between filled the bucket")
		require.Zero(t, third.Remaining)
	})
}
