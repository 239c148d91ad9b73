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

// holdNth is a client hook that holds the nth lone run of the script (from
// 1) until release is closed or the command's ctx ends.
type holdNth struct {
	n       atomic.Int64
	seen    atomic.Int64
	held    atomic.Bool
	release chan struct{}
}

func (h *holdNth) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdNth) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.HasPrefix(cmd.Name(), "eval") && h.seen.Add(1) == h.n.Load() {
			h.held.Store(true)
			select {
			case <-h.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func (h *holdNth) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Regression: a ratelimit.Transport told by WaitN that the request's
// deadline is too close asked the limiter again how long the wait would be,
// with Take: a second round trip for one request, which waited for Redis
// with no ctx of the caller's after the request's had ended. WaitN says the
// delay itself now (a *ratelimit.DeadlineError), and the Transport passes it
// on, under the request's key, after the one round trip, whether the Limiter
// is PerHost, or one of its Handles is the Transport's Limiter, in a Tally's
// wrapper or not. (ratelimit's own tests cover a limiter that does not say
// the delay, asked with the request's ctx.)
func TestReview12TransportDeadlineOneRoundTrip(t *testing.T) {
	c := backends(t)[0].client(t)
	h := &holdNth{release: make(chan struct{})} // n 0: counts, holds nothing
	c.AddHook(h)
	l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 1, Timeout: time.Hour})
	require.True(t, l.Take("h", 1).Allowed) // the script loaded, the bucket empty
	tally := new(ratelimit.Tally)
	send := roundTripFunc(func(*http.Request) (*http.Response, error) {
		t.Error("the request was sent")
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	for _, tc := range []struct {
		name string
		tr   *ratelimit.Transport
		key  string
	}{
		{"PerHost", &ratelimit.Transport{PerHost: l, Key: func(*http.Request) string { return "h" }, Base: send}, "h"},
		{"Handle", &ratelimit.Transport{Limiter: l.For("h"), Base: send}, ""},
		{"tallied Handle", &ratelimit.Transport{Limiter: tally.Wrap(l.For("h")), Base: send}, ""},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a token takes 1000 s
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
		require.NoError(t, err)
		before := h.seen.Load()
		_, err = tc.tr.RoundTrip(req)
		cancel()
		var de *ratelimit.DeadlineError
		require.ErrorAs(t, err, &de, tc.name)
		require.Equal(t, tc.key, de.Key, tc.name)
		require.Greater(t, de.Delay, time.Minute, tc.name)
		require.Equal(t, int64(1), h.seen.Load()-before, "%s: round trips to Redis for one request", tc.name)
	}
	require.Equal(t, ratelimit.TallyCounts{WaitFailed: 1}, tally.Counts())
	require.Zero(t, l.Failures())
}

// With Redis failing and FailLocal, a ratelimit.Transport request that the
// in-process bucket cannot serve before its deadline costs two calls of the
// Limiter: WaitN's attempt, which fails with ErrWouldExceedDeadline, and the
// TakeContext the Transport then makes to learn the delay, a second round
// trip to the failing Redis (up to a second Timeout) counted as a second
// failure in Failures and told to OnError twice, for one request. Right: one
// request, one failure, one Timeout at most. The fix would have WaitN return
// a *ratelimit.DeadlineError (it matches ErrWouldExceedDeadline, but is not
// ==), which Transport would pass on without asking again: a change of the
// error value WaitN documents, left to the lead.
func TestReview12TransportFailLocalCountsARequestOnce(t *testing.T) {
	c := backends(t)[0].client(t)
	h := &armedHook{lone: isEvalOrDel, piped: isEvalOrDel, act: func() error { return errors.New("down") }}
	h.armed.Store(true)
	c.AddHook(h)
	var reported atomic.Int32
	l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 1, Policy: FailLocal,
		OnError: func(string, error) { reported.Add(1) }})
	tr := &ratelimit.Transport{
		PerHost: l,
		Base: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
		}),
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 2 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		if i == 0 {
			require.NoError(t, err)
			_ = resp.Body.Close()
		} else {
			var de *ratelimit.DeadlineError
			require.ErrorAs(t, err, &de, "the local bucket's token is 1000 s away")
		}
		require.Equal(t, int64(i+1), l.Failures(), "request %d", i)
		require.Equal(t, int32(i+1), reported.Load(), "request %d", i)
	}
}
