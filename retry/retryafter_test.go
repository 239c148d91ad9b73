package retry_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

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
