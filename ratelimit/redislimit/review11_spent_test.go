package redislimit

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// lateReply is a client hook that, once armed, holds the reply of the
// script's next lone run until the test releases it: the script has run in
// Redis, and its reply is on its way, as the caller's ctx ends.
type lateReply struct {
	armed    atomic.Bool   // set to arm, for one run
	ran      chan struct{} // closed once the held run has run
	released chan struct{} // closed to let its reply go
}

func (h *lateReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *lateReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if strings.HasPrefix(cmd.Name(), "eval") && h.armed.CompareAndSwap(true, false) {
			close(h.ran)
			<-h.released
		}
		return err
	}
}

func (h *lateReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A call whose ctx ends while its round trip is under way returns ctx.Err(),
// and its Decision is lost; but Redis may have run the script and taken the
// events, which then count against the limit for nobody. The library's rule
// is that a waiter whose ctx ends is never granted anything, and what it
// would have been granted goes to the next caller; here it goes to no one,
// and TakeContext's, AllowN's and WaitN's docs did not say so.
//
// Skipped: the reply that comes after the caller has left cannot be given
// back exactly. A give-back of the increment is more than right when the
// bucket has been full since the grant (others' takes would be given back
// too), which would exceed the limit that the package promises never to
// exceed; and a client that honours deadlines ends the round trip without
// a reply at all. The docs now say that such events may be taken, which
// errs on the side of the limit; see the report.
func TestReview11CancelledCallSpendsNothing(t *testing.T) {
	t.Skip("a call whose ctx ends during its round trip may have its events taken in Redis for nobody: inherent, now documented; see the report")
	b := backends(t)[0]
	c := b.client(t)
	h := &lateReply{ran: make(chan struct{}), released: make(chan struct{})}
	c.AddHook(h)
	l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 5, Prefix: b.prefix})
	bg := context.Background()
	_, err := l.TakeContext(bg, "warm", 1) // the script loaded
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(bg)
	h.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := l.TakeContext(ctx, "k", 1)
		done <- err
	}()
	<-h.ran
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	close(h.released)
	require.Eventually(t, func() bool { return l.underway() == 0 }, 5*time.Second, time.Millisecond)

	d, err := l.TakeContext(bg, "k", 1)
	require.NoError(t, err)
	require.Equal(t, 4, d.Remaining, "the cancelled call's event was taken for nobody")
}
