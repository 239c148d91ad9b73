package redislimit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// dropper is a client hook of the user's that, armed, drops each command
// without sending it and without an error: go-redis then leaves the
// command with no reply and no error.
func dropper() *armedHook {
	return &armedHook{lone: anyCommand, piped: anyCommand, act: func() error { return nil }}
}

// TestReview11bLoneCommandWithoutReply pins a case that the handling of
// commands left without a reply missed: a pipeline's command with no reply
// and no error fails with errNoReply, but a call's own round trip, which
// is not a pipeline, took a DEL that a hook dropped without an error for
// go-redis's IntCmd's 0: Reset reported success, and the key kept its
// state. (A decision failed with "redis: unexpected type=<nil> for
// Int64".) The right behaviour: a command of a lone round trip left
// without a reply fails as one of a pipeline does, Reset with an error
// that matches ErrUnavailable.
func TestReview11bLoneCommandWithoutReply(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		c := b.client(t)
		h := dropper()
		c.AddHook(h)
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 2, Prefix: b.prefix, Policy: FailClosed})
		ctx := context.Background()
		_, err := l.TakeContext(ctx, "r", 2) // the bucket is empty now
		require.NoError(t, err)

		h.armed.Store(true)
		resetErr := l.Reset(ctx, "r")
		_, takeErr := l.TakeContext(ctx, "r", 1)
		h.armed.Store(false)

		d, err := l.TakeContext(ctx, "r", 1)
		require.NoError(t, err)
		require.False(t, d.Allowed, "the key was never reset")
		require.ErrorIs(t, resetErr, ErrUnavailable, "a Reset whose DEL a hook dropped without an error")
		require.ErrorIs(t, resetErr, errNoReply)
		require.ErrorIs(t, takeErr, ErrUnavailable)
		require.ErrorIs(t, takeErr, errNoReply, "a decision whose command a hook dropped")
	})
}
