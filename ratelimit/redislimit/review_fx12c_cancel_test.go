package redislimit

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// cancelAfterEval is a client hook that, once armed, runs the next lone run
// of the script and then cancels the caller's ctx: the caller's ctx ends
// just as Redis's answer comes back.
type cancelAfterEval struct {
	cancel atomic.Pointer[context.CancelFunc]
}

func (h *cancelAfterEval) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cancelAfterEval) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if strings.HasPrefix(cmd.Name(), "eval") {
			if c := h.cancel.Swap(nil); c != nil {
				(*c)()
			}
		}
		return err
	}
}

func (h *cancelAfterEval) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Regression: a WaitN (Limiter's or Handle's) whose ctx was cancelled during
// its round trip, Redis answering "not yet" with a delay past the ctx's
// deadline, failed with a *ratelimit.DeadlineError (errors.Is
// context.DeadlineExceeded, not context.Canceled) rather than ctx.Err(): the
// rule is that a call whose ctx has ended returns ctx.Err(). Through
// ratelimit.Transport this is a regression of passing the said delay on
// (saidDelay): before, the Transport asked again with the request's ctx and
// returned ctx.Err(), as its doc says ("a request whose ctx ends meanwhile
// fails with ctx.Err()"); now a cancelled request (its client gone) reads as
// one refused for its deadline, with a RetryAfter that retry.Transport may
// honour. Right: WaitN looks at ctx.Err() before it says the delay.
func TestReviewFx12cWaitCancelledInRoundTripReturnsCtxErr(t *testing.T) {
	c := backends(t)[0].client(t)
	h := new(cancelAfterEval)
	c.AddHook(h)
	l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 1})
	require.True(t, l.Take("h", 1).Allowed) // the bucket empty: a token is 1000 s away
	send := roundTripFunc(func(*http.Request) (*http.Response, error) {
		t.Error("the request was sent")
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	tally := new(ratelimit.Tally)
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Limiter.WaitN", func(ctx context.Context) error { return l.WaitN(ctx, "h", 1) }},
		{"Handle.WaitN", func(ctx context.Context) error { return l.For("h").WaitN(ctx, 1) }},
		{"Transport PerHost", func(ctx context.Context) error {
			return roundTrip(ctx, &ratelimit.Transport{PerHost: l, Key: func(*http.Request) string { return "h" }, Base: send})
		}},
		{"Transport Handle", func(ctx context.Context) error {
			return roundTrip(ctx, &ratelimit.Transport{Limiter: l.For("h"), Base: send})
		}},
		{"Transport tallied Handle", func(ctx context.Context) error {
			return roundTrip(ctx, &ratelimit.Transport{Limiter: tally.Wrap(l.For("h")), Base: send})
		}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		h.cancel.Store(&cancel)
		err := tc.call(ctx)
		cancel()
		require.ErrorIs(t, err, context.Canceled, "%s: its ctx was cancelled in the round trip", tc.name)
		var de *ratelimit.DeadlineError
		require.False(t, errors.As(err, &de), "%s = %v, want ctx.Err()", tc.name, err)
	}
}

func roundTrip(ctx context.Context, tr *ratelimit.Transport) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
	if err != nil {
		return err
	}
	resp, err := tr.RoundTrip(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	return err
}
