package breaker_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/retry"
)

// Regression: a breaker forced open with an opening of length 0 (an
// OpenBackoff that returns 0) or of a few nanoseconds (OpenTimeout 1ns)
// refused with a RetryAfter of that length, and retry.Transport over it
// (the README's stack), which honours RetryAfter as a floor on its waits,
// sent the request again at once, over and over: with NoDelay, a thousand
// refusals in no time, for as long as its attempts lasted; its backoff,
// when it has one, was all that spaced them. A forced opening has no end
// in time (until Reset nobody knows when it ends), so RetryAfter is a pace
// at which to look again: the opening's length, but at least a second.
// Right: over ten seconds, a retry loop that honours it makes at most a
// few attempts a second.
// forcedRT is a RoundTripper of a function. The test is external: retry
// imports pool, which imports breaker, so an internal test of breaker cannot
// import retry.
type forcedRT func(*http.Request) (*http.Response, error)

func (f forcedRT) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestForcedOpenRetryDoesNotSpin(t *testing.T) {
	for name, s := range map[string]breaker.Settings{
		"OpenBackoff=0":   {OpenBackoff: func(int) time.Duration { return 0 }},
		"OpenTimeout=1ns": {OpenTimeout: time.Nanosecond},
		"OpenTimeout=1ms": {OpenTimeout: time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent int
				tr := &breaker.Transport{Settings: s, Base: forcedRT(func(req *http.Request) (*http.Response, error) {
					sent++
					return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
				})}
				client := &http.Client{Transport: &retry.Transport{Base: tr, Policy: retry.Policy{
					NoDelay: true, MaxAttempts: 1000,
				}}}
				resp, err := client.Get("http://a.test/")
				require.NoError(t, err)
				resp.Body.Close()
				b := tr.Breaker("a.test")
				b.ForceOpen()

				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://a.test/", nil)
				_, err = client.Do(req)
				require.ErrorIs(t, err, breaker.ErrOpen)
				refused := b.Counts().Rejected
				require.LessOrEqual(t, refused, int64(20),
					"refusals of a forced-open breaker to a retry loop over 10s: it spins")
				require.Equal(t, 1, sent, "requests sent through a forced-open breaker")
				require.True(t, strings.Contains(err.Error(), "forced open"), "%v", err)

				var oe *breaker.OpenError
				require.True(t, errors.As(err, &oe))
				require.True(t, oe.Forced)
				require.GreaterOrEqual(t, oe.RetryAfter(), time.Second, "RetryAfter of a forced opening")
			})
		})
	}
}
