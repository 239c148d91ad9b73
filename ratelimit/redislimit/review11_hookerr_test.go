package redislimit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// errHookSaysNo is the error of refuser, a client hook of the user's (a
// breaker, a shutdown switch) that fails pipelines without sending them.
var errHookSaysNo = errors.New("hook says no")

// refuser fails pipelines of the scripts (or of a Reset's DEL) without
// sending them.
func refuser() *armedHook {
	return &armedHook{piped: isEvalOrDel, act: func() error { return errHookSaysNo }}
}

// Regression: a client hook that failed a pipeline without sending it (its
// error is the pipeline's; go-redis leaves its commands without a reply or an
// error) made a Reset carried in it report success, though no DEL was sent
// and the key kept its state; and the decisions carried with it failed with
// "redis: unexpected type=<nil> for Int64" rather than the hook's error,
// which OnError and the caller must see, as they do when the same hook fails
// a lone command. Each call of such a pipeline fails with the pipeline's
// error: Reset with an error that matches ErrUnavailable, a decision by the
// Policy with one that matches the hook's error too.
func TestReview11HookFailedPipelineIsNoReply(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		h := refuser()
		c.AddHook(h)
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 2, Prefix: b.prefix, MaxRoundTrips: 1, Policy: FailClosed})
		ctx := context.Background()
		_, err := l.TakeContext(ctx, "r", 2) // the bucket is empty now
		require.NoError(t, err)
		g := newGate(c)
		first := make(chan error, 1)
		go func() {
			_, err := l.TakeContext(ctx, "other", 1)
			first <- err
		}()
		require.Eventually(t, func() bool { return g.heldRuns() == 1 }, 5*time.Second, time.Millisecond)
		var wg sync.WaitGroup
		var resetErr, takeErr error
		wg.Go(func() { resetErr = l.Reset(ctx, "r") })
		require.Eventually(t, func() bool { return l.queued() == 1 }, 5*time.Second, time.Millisecond)
		wg.Go(func() { _, takeErr = l.TakeContext(ctx, "r", 1) })
		require.Eventually(t, func() bool { return l.queued() == 2 }, 5*time.Second, time.Millisecond)
		h.armed.Store(true)
		close(g.open)
		require.NoError(t, <-first)
		wg.Wait()
		h.armed.Store(false)

		require.ErrorIs(t, resetErr, ErrUnavailable, "a Reset whose pipeline the hook failed")
		require.ErrorIs(t, resetErr, errHookSaysNo)
		require.ErrorIs(t, takeErr, ErrUnavailable)
		require.ErrorIs(t, takeErr, errHookSaysNo, "the decision's error")
		d, err := l.TakeContext(ctx, "r", 1)
		require.NoError(t, err)
		require.False(t, d.Allowed, "the key was never reset")
	})
}
