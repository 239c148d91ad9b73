package ratelimit_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// TestSeams15_CancelledWhileWaitingBeforeAHalfOpenBreaker: a request that
// waits for a Tally's limiter in front of a half-open breaker.Transport and
// is cancelled there counts as one failed wait and nothing in the breaker
// (no call, no refusal, no trial slot), and takes no event: the next
// request is sent when the token it would have had comes, as the trial
// that closes the breaker.
func TestSeams15_CancelledWhileWaitingBeforeAHalfOpenBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fail := true
		var sentAt []time.Duration
		start := time.Now()
		base := roundTripper(func(r *http.Request) (*http.Response, error) {
			sentAt = append(sentAt, time.Since(start))
			code := 200
			if fail {
				code = 503
			}
			return &http.Response{StatusCode: code, Body: http.NoBody, Request: r}, nil
		})
		var tally ratelimit.Tally
		cb := &breaker.Transport{Base: base, Settings: breaker.Settings{FailureThreshold: 1, OpenTimeout: time.Second}}
		tr := &ratelimit.Transport{Base: cb, Limiter: tally.Wrap(ratelimit.NewTokenBucket(0.25, 1))} // a token every 4s
		get := func(ctx context.Context) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://a.test/", nil)
			return tr.RoundTrip(req)
		}
		resp, err := get(context.Background())
		require.NoError(t, err)
		require.Equal(t, 503, resp.StatusCode)
		b := cb.Breaker("a.test")
		time.Sleep(time.Second)
		require.Equal(t, breaker.HalfOpen, b.State())
		fail = false

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() {
			_, err := get(ctx)
			done <- err
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		cancel()
		require.Equal(t, context.Canceled, <-done)
		require.Equal(t, ratelimit.TallyCounts{Waited: 1, WaitFailed: 1}, tally.Counts())
		require.Equal(t, breaker.Counts{}, b.Counts(), "the cancelled wait counted in the half-open breaker")

		resp, err = get(context.Background())
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, []time.Duration{0, 4 * time.Second}, sentAt)
		require.Equal(t, breaker.Closed, b.State())
		require.Equal(t, ratelimit.TallyCounts{Waited: 2, WaitFailed: 1}, tally.Counts())
	})
}
