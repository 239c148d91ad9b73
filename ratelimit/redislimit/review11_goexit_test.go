package redislimit

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// armedHook is a client hook of the user's that, while armed, does act
// instead of sending a lone command that lone picks, or a pipeline whose
// first command piped picks (by name; nil picks none). act calls
// runtime.Goexit (as t.FailNow does), or returns an error to fail the
// command with (nil: dropped, with no reply and no error).
type armedHook struct {
	armed       atomic.Bool
	lone, piped func(name string) bool
	act         func() error
}

func (h *armedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *armedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.armed.Load() && h.lone != nil && h.lone(cmd.Name()) {
			return h.act()
		}
		return next(ctx, cmd)
	}
}

func (h *armedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.armed.Load() && h.piped != nil && h.piped(cmds[0].Name()) {
			return h.act()
		}
		return next(ctx, cmds)
	}
}

func isEval(name string) bool      { return strings.HasPrefix(name, "eval") }
func isEvalOrDel(name string) bool { return isEval(name) || name == "del" }
func anyCommand(string) bool       { return true }

// goexitHook calls runtime.Goexit instead of sending the scripts' commands
// (and a Reset's DEL, lone), lone or in pipelines.
func goexitHook() *armedHook {
	return &armedHook{lone: isEvalOrDel, piped: isEval, act: func() error { runtime.Goexit(); return nil }}
}

// Regression: a call that the Limiter sends from a goroutine of its own (a
// client without ContextTimeoutEnabled, or a cancellable ctx) read a client
// hook's runtime.Goexit there as a reply of 0: the call was allowed, with the
// Remaining of a full bucket and no error, by a Redis that was never asked,
// whatever the Policy; and Reset said it had deleted the key. Redis did not
// answer: the call must follow the Policy (FailClosed here refuses) with an
// error that matches ErrUnavailable, as redissync's calls do, and count as a
// failure; Reset must return such an error.
func TestReview11GoexitInLoneRoundTripIsNoGrant(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		h := goexitHook()
		c.AddHook(h)
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 1, Prefix: b.prefix, MaxRoundTrips: 1, Policy: FailClosed})
		ctx := context.Background()
		d, err := l.TakeContext(ctx, "g", 1)
		require.NoError(t, err)
		require.True(t, d.Allowed)

		h.armed.Store(true)
		d, err = l.TakeContext(ctx, "g", 1)
		require.ErrorIs(t, err, ErrUnavailable, "TakeContext whose round trip ended in a Goexit: Decision %+v", d)
		require.False(t, d.Allowed, "FailClosed, and the bucket is empty anyway")
		require.EqualValues(t, 1, l.Failures())
		require.ErrorIs(t, l.Reset(ctx, "g"), ErrUnavailable, "Reset whose DEL ended in a Goexit")
		h.armed.Store(false)

		require.Eventually(t, func() bool { return l.underway() == 0 }, 5*time.Second, time.Millisecond,
			"a round trip's place was kept")
		d, err = l.TakeContext(ctx, "g", 1)
		require.NoError(t, err)
		require.False(t, d.Allowed, "the key was never reset: its bucket is still empty")
	})
}

// Regression: a client hook's runtime.Goexit in a pipeline ended the
// pipeline's goroutine without telling its calls (they waited for their
// Timeout) and without ending its round trip: its place among MaxRoundTrips
// was kept for good, so with MaxRoundTrips 1 every later call queued behind
// it and followed the Policy at its Timeout, for the life of the Limiter. The
// calls of the pipeline must fail at once (the Policy, with an error that
// matches ErrUnavailable), and the place pass on.
func TestReview11GoexitInPipelineKeepsNoPlace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		h := goexitHook()
		c.AddHook(h) // before the gate: the lone run passes it, then waits
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 10, Prefix: b.prefix, MaxRoundTrips: 1,
			Policy: FailClosed, Timeout: 2 * time.Second})
		ctx := context.Background()
		// Load the script: the lone run below must not send it again past
		// the armed hook.
		_, err := l.TakeContext(ctx, "warm", 1)
		require.NoError(t, err)
		g := newGate(c)
		first := make(chan error, 1)
		go func() {
			_, err := l.TakeContext(ctx, "p", 1)
			first <- err
		}()
		require.Eventually(t, func() bool { return g.heldRuns() == 1 }, 5*time.Second, time.Millisecond)
		const queued = 3
		var wg sync.WaitGroup
		errs := make([]error, queued)
		for i := range queued {
			wg.Go(func() {
				d, err := l.TakeContext(ctx, "p", 1)
				assert.False(t, d.Allowed, "FailClosed")
				errs[i] = err
			})
			require.Eventually(t, func() bool { return l.queued() == i+1 }, 5*time.Second, time.Millisecond)
		}
		h.armed.Store(true) // the lone run is past the hook, held at the gate
		close(g.open)
		require.NoError(t, <-first)
		wg.Wait()
		h.armed.Store(false)
		for i, err := range errs {
			require.ErrorIs(t, err, ErrUnavailable, "call %d of the pipeline", i)
		}
		require.Eventually(t, func() bool { return l.underway() == 0 }, 5*time.Second, time.Millisecond,
			"the pipeline's place was kept")
		d, err := l.TakeContext(ctx, "p", 1)
		require.NoError(t, err, "a call after the Goexit")
		require.True(t, d.Allowed)
	})
}
