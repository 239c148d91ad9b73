package retry_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/retry"
)

// TestTransportRetryAfterOn502And504 pins a bug: a Retry-After on a 502 or
// a 504 set the floor of the next wait, as on a 429 or a 503, while the
// package doc said 429 and 503 only. RFC 9110 gives Retry-After its meaning
// on a 503 (and on redirections), RFC 6585 on a 429; on a 502 or a 504 it
// is a proxy's header passed along, not the server's word. Those are
// retried after the backoff, and their StatusError has no Delay.
func TestTransportRetryAfterOn502And504(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			code int
			want time.Duration
		}{
			{429, 3 * time.Second},
			{503, 3 * time.Second},
			{502, 100 * ms},
			{504, 100 * ms},
		} {
			s := &script{codes: []int{c.code, 200}, header: http.Header{"Retry-After": {"3"}}}
			var rec recorder
			p := retry.Policy{InitialDelay: 100 * ms, MaxDelay: time.Second, Jitter: retry.NoJitter, OnRetry: rec.onRetry}
			start := time.Now()
			resp, err := (&retry.Transport{Base: s, Policy: p}).RoundTrip(newGet(t, "http://x/"))
			require.NoError(t, err)
			require.Equal(t, 200, resp.StatusCode)
			require.Equal(t, []time.Duration{c.want}, rec.delays, "status %d with Retry-After: 3", c.code)
			require.Equal(t, c.want, time.Since(start), "status %d", c.code)
			var se *retry.StatusError
			require.ErrorAs(t, rec.errs[0], &se)
			if c.want == 3*time.Second {
				require.Equal(t, 3*time.Second, se.Delay, "status %d", c.code)
			} else {
				require.Zero(t, se.Delay, "status %d", c.code)
				require.Zero(t, se.RetryAfter(), "status %d", c.code)
			}
		}
	})
}

// TestTransportOverOpenBreakerStalls pins a bug: retry.Transport over
// breaker.Transport, both with their defaults, made each request that met
// the open breaker wait out its whole open time (30s) for one trial, then
// fail: a user's request stalled half a minute. A refusal whose RetryAfter
// is beyond Policy.MaxRetryAfter (10s by default) now fails the request at
// once, with an error that matches breaker.ErrOpen.
func TestTransportOverOpenBreakerStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errDown := errors.New("connection refused")
		sent := 0
		down := roundTripperFunc(func(*http.Request) (*http.Response, error) { sent++; return nil, errDown })
		client := &http.Client{Transport: &retry.Transport{Base: &breaker.Transport{Base: down}}}
		refused := 0
		for i := range 10 {
			ctx, cancel := context.WithTimeout(context.Background(), 70*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/", nil)
			start := time.Now()
			resp, err := client.Do(req)
			took := time.Since(start)
			cancel()
			require.Nil(t, resp)
			require.Error(t, err)
			// Three attempts, two waits of the backoff: at most 100ms and
			// 200ms with full jitter.
			require.LessOrEqual(t, took, 300*ms, "request %d took %v: %v", i+1, took, err)
			if !errors.Is(err, breaker.ErrOpen) {
				require.ErrorIs(t, err, errDown)
				continue
			}
			if refused++; refused > 1 {
				// Refused at its first attempt: at once.
				rerr := asError(t, err)
				require.Equal(t, retry.MaxRetryAfterExceeded, rerr.Reason, "request %d: %v", i+1, err)
				require.Equal(t, 1, rerr.Attempts)
				require.Zero(t, took, "request %d", i+1)
			}
		}
		// Five failures open the breaker, in the second request's second
		// attempt; its third, and every later request, are refused.
		require.Equal(t, 5, sent, "requests sent past the breaker")
		require.Equal(t, 9, refused)
	})
}

// TestTransportRetryAfterHourStalls pins a bug: a 503 with Retry-After:
// 3600 held a request without a deadline for an hour, with the zero
// Policy. Beyond MaxRetryAfter the 503 comes back at once, its
// Retry-After for the caller to read; a MaxRetryAfter that allows it
// waits it.
func TestTransportRetryAfterHourStalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			maxRetryAfter time.Duration
			wantStatus    int
			want          time.Duration
		}{
			{0, 503, 0},
			{time.Hour - time.Second, 503, 0},
			{time.Hour, 200, time.Hour},
		} {
			s := &script{codes: []int{503, 200}, header: http.Header{"Retry-After": {"3600"}}}
			start := time.Now()
			resp, err := (&retry.Transport{Base: s, Policy: retry.Policy{MaxRetryAfter: c.maxRetryAfter}}).RoundTrip(newGet(t, "http://x/"))
			require.NoError(t, err)
			require.Equal(t, c.wantStatus, resp.StatusCode, "MaxRetryAfter %v", c.maxRetryAfter)
			require.Equal(t, c.want, time.Since(start), "MaxRetryAfter %v", c.maxRetryAfter)
			if c.wantStatus == 503 {
				require.Len(t, s.reqs, 1)
				require.Equal(t, "3600", resp.Header.Get("Retry-After"))
				require.False(t, s.bodies[0].closed, "the response returned was closed")
			}
			_ = resp.Body.Close()
		}
	})
}

// TestMaxRetryAfter: a RetryAfter() up to MaxRetryAfter is waited, even
// beyond MaxDelay; one beyond it ends the retries at once, whatever the
// backoff drew. The default is 10s, or MaxDelay if longer.
func TestMaxRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			p     retry.Policy
			asked time.Duration
			waits bool
		}{
			{retry.Policy{}, 10 * time.Second, true},
			{retry.Policy{}, 10*time.Second + 1, false},
			{retry.Policy{NoDelay: true}, 10 * time.Second, true},
			{retry.Policy{NoDelay: true}, 11 * time.Second, false},
			{retry.Policy{MaxDelay: time.Second}, 10 * time.Second, true},
			{retry.Policy{MaxDelay: 30 * time.Second}, 30 * time.Second, true},
			{retry.Policy{MaxDelay: 30 * time.Second}, 30*time.Second + 1, false},
			{retry.Policy{MaxRetryAfter: time.Second}, time.Second, true},
			{retry.Policy{MaxRetryAfter: time.Second}, 2 * time.Second, false},
			// Below a MaxDelay the backoff may reach: still refused, so
			// that the answer does not hang on the jitter.
			{retry.Policy{MaxRetryAfter: time.Second, MaxDelay: time.Minute, InitialDelay: time.Minute}, 2 * time.Second, false},
			{retry.Policy{MaxRetryAfter: time.Duration(math.MaxInt64)}, 1000 * time.Hour, true},
			{retry.Policy{MaxRetryAfter: 1}, 1, true},
			{retry.Policy{MaxRetryAfter: 1}, 2, false},
		} {
			var rec recorder
			p := c.p
			p.OnRetry = rec.onRetry
			calls := 0
			start := time.Now()
			err := p.Execute(context.Background(), failing(1, retryAfterErr(c.asked), &calls))
			if c.waits {
				require.NoError(t, err, "%+v asked %v", c.p, c.asked)
				require.Len(t, rec.delays, 1)
				require.GreaterOrEqual(t, rec.delays[0], c.asked, "%+v", c.p)
				require.Equal(t, rec.delays[0], time.Since(start))
				continue
			}
			rerr := asError(t, err)
			require.Equal(t, retry.MaxRetryAfterExceeded, rerr.Reason, "%+v asked %v", c.p, c.asked)
			require.Equal(t, 1, rerr.Attempts)
			require.Equal(t, 1, calls)
			require.Empty(t, rec.delays)
			require.Zero(t, time.Since(start))
			require.Equal(t, "retry: 1 attempt (retry-after beyond the maximum): "+retryAfterErr(c.asked).Error(), err.Error())
		}

		// The deadline and MaxElapsed, checked first, give their reasons.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		calls := 0
		err := retry.Policy{}.Execute(ctx, failing(1, retryAfterErr(time.Hour), &calls))
		require.Equal(t, retry.DeadlineReached, asError(t, err).Reason)
		calls = 0
		err = retry.Policy{MaxElapsed: time.Minute}.Execute(context.Background(), failing(1, retryAfterErr(time.Hour), &calls))
		require.Equal(t, retry.MaxElapsedReached, asError(t, err).Reason)

		// A budget is not spent on a retry MaxRetryAfter refuses.
		b := retry.NewBudget(0, 0.1) // one retry in its window
		calls = 0
		err = retry.Policy{Budget: b}.Execute(context.Background(), failing(1, retryAfterErr(time.Hour), &calls))
		require.Equal(t, retry.MaxRetryAfterExceeded, asError(t, err).Reason)
		calls = 0
		require.NoError(t, retry.Policy{Budget: b, NoDelay: true}.Execute(context.Background(), failing(1, errFail, &calls)))
	})
}
