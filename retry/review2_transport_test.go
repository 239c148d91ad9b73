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

// TestReview2RetryAfterForms: Retry-After on a 429 or a 503, in every form
// RFC 9110 allows (delay-seconds; IMF-fixdate, RFC 850 and asctime dates),
// sets the floor of the next wait, up to MaxRetryAfter (10s here, the
// default) included; a value it cannot read, a negative or signed number, a
// date not in the future leave the backoff (100ms) to decide; a wait beyond
// MaxRetryAfter, or beyond any duration, returns the response at once,
// unread and open, with one attempt made.
func TestReview2RetryAfterForms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const exceeded = time.Duration(-1)
		at := func(d time.Duration, layout string) func() string {
			return func() string { return time.Now().Add(d).UTC().Format(layout) }
		}
		const (
			rfc850  = "Monday, 02-Jan-06 15:04:05 GMT"
			asctime = "Mon Jan _2 15:04:05 2006"
		)
		lit := func(v string) func() string { return func() string { return v } }
		for _, c := range []struct {
			value func() string
			want  time.Duration
		}{
			{lit("1"), time.Second},
			{lit("0003"), 3 * time.Second},
			{lit("10"), 10 * time.Second},
			{lit("11"), exceeded},
			{lit("3600"), exceeded},
			{lit("18446744073709551615"), exceeded},
			{lit("18446744073709551616"), exceeded},
			{lit("9223372036"), exceeded},
			{lit("+3"), 100 * ms},
			{lit("-3"), 100 * ms},
			{lit("-99999999999999999999"), 100 * ms},
			{lit("3s"), 100 * ms},
			{lit("1e3"), 100 * ms},
			{lit("3, 4"), 100 * ms},
			{lit("0x10"), 100 * ms},
			{lit(""), 100 * ms},
			{lit("\t"), 100 * ms},
			{lit("Tomorrow"), 100 * ms},
			{at(4*time.Second, http.TimeFormat), 4 * time.Second},
			{at(10*time.Second, http.TimeFormat), 10 * time.Second},
			{at(11*time.Second, http.TimeFormat), exceeded},
			{at(6*time.Second, rfc850), 6 * time.Second},
			{at(7*time.Second, asctime), 7 * time.Second},
			{at(0, http.TimeFormat), 100 * ms},
			{at(-time.Hour, http.TimeFormat), 100 * ms},
			{at(100*365*24*time.Hour, http.TimeFormat), exceeded},
			{lit("Fri, 31 Dec 9999 23:59:59 GMT"), exceeded},
		} {
			for _, code := range []int{429, 503} {
				// Every wait starts on a whole second of the clock, so
				// that a date's truncation to seconds loses nothing.
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
				v := c.value()
				s := &script{codes: []int{code, 200}, header: http.Header{"Retry-After": {v}}}
				var rec recorder
				p := retry.Policy{InitialDelay: 100 * ms, MaxDelay: time.Second, Jitter: retry.NoJitter, OnRetry: rec.onRetry}
				start := time.Now()
				resp, err := (&retry.Transport{Base: s, Policy: p}).RoundTrip(newGet(t, "http://x/"))
				require.NoError(t, err, "%d, Retry-After %q", code, v)
				if c.want == exceeded {
					require.Equal(t, code, resp.StatusCode, "Retry-After %q", v)
					require.Len(t, s.reqs, 1, "Retry-After %q", v)
					require.Empty(t, rec.delays)
					require.Zero(t, time.Since(start))
					require.Equal(t, v, resp.Header.Get("Retry-After"))
					require.False(t, s.bodies[0].closed, "the response returned was closed")
					require.Zero(t, s.bodies[0].read, "the response returned was read")
					_ = resp.Body.Close()
					continue
				}
				require.Equal(t, 200, resp.StatusCode, "%d, Retry-After %q", code, v)
				require.Equal(t, []time.Duration{c.want}, rec.delays, "%d, Retry-After %q", code, v)
				require.Equal(t, c.want, time.Since(start), "%d, Retry-After %q", code, v)
				require.True(t, s.bodies[0].closed)
				_ = resp.Body.Close()
			}
		}
	})
}

// TestReview2RetryAfterOn502And504NeverEndsRetries: a 502's or a 504's
// Retry-After is not honoured, so it cannot end the retries either, however
// long it asks: three attempts, the backoff's waits, the last response.
func TestReview2RetryAfterOn502And504NeverEndsRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, code := range []int{502, 504} {
			for _, v := range []string{"3600", "99999999999999999999", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)} {
				s := &script{codes: []int{code}, header: http.Header{"Retry-After": {v}}}
				var rec recorder
				p := retry.Policy{InitialDelay: 100 * ms, Jitter: retry.NoJitter, OnRetry: rec.onRetry}
				resp, err := (&retry.Transport{Base: s, Policy: p}).RoundTrip(newGet(t, "http://x/"))
				require.NoError(t, err)
				require.Equal(t, code, resp.StatusCode)
				require.Len(t, s.reqs, 3, "%d, Retry-After %q", code, v)
				require.Equal(t, []time.Duration{100 * ms, 200 * ms}, rec.delays)
				for _, se := range rec.errs {
					var serr *retry.StatusError
					require.ErrorAs(t, se, &serr)
					require.Zero(t, serr.Delay)
				}
				_ = resp.Body.Close()
			}
		}
	})
}

// TestReview2MaxRetryAfterHonourAll: with MaxRetryAfter at the largest
// duration, a Retry-After beyond any duration is waited: until the request's
// deadline says no (the response, at once), or until its ctx ends during the
// wait (the ctx's error, the kept response closed, no timer left).
func TestReview2MaxRetryAfterHonourAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := retry.Policy{MaxRetryAfter: time.Duration(math.MaxInt64)}
		ctx, cancel := context.WithTimeout(context.Background(), 1000*time.Hour)
		s := &script{codes: []int{503}, header: http.Header{"Retry-After": {"99999999999999999999"}}}
		start := time.Now()
		resp, err := (&retry.Transport{Base: s, Policy: p}).RoundTrip(newGet(t, "http://x/").WithContext(ctx))
		cancel()
		require.NoError(t, err)
		require.Equal(t, 503, resp.StatusCode)
		require.Zero(t, time.Since(start))
		_ = resp.Body.Close()

		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(1000*time.Hour, cancel)
		s = &script{codes: []int{503}, header: http.Header{"Retry-After": {"99999999999999999999"}}}
		start = time.Now()
		resp, err = (&retry.Transport{Base: s, Policy: p}).RoundTrip(newGet(t, "http://x/").WithContext(ctx))
		require.Nil(t, resp)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, retry.ContextDone, asError(t, err).Reason)
		require.Equal(t, 1000*time.Hour, time.Since(start))
		require.True(t, s.bodies[0].closed)
		synctest.Wait()
	})
}

// TestReview2MaxRetryAfterMisuse: a negative MaxRetryAfter, down to the
// smallest duration, panics with a message naming the package, in Execute
// and in Transport's RoundTrip, before anything is sent.
func TestReview2MaxRetryAfterMisuse(t *testing.T) {
	for _, d := range []time.Duration{-1, -time.Second, time.Duration(math.MinInt64)} {
		p := retry.Policy{MaxRetryAfter: d}
		require.PanicsWithValue(t, "retry: negative Policy.MaxRetryAfter", func() {
			_ = p.Execute(context.Background(), func(context.Context) error { return nil })
		})
		sent := 0
		base := roundTripperFunc(func(*http.Request) (*http.Response, error) { sent++; return nil, errors.New("x") })
		require.PanicsWithValue(t, "retry: negative Policy.MaxRetryAfter", func() {
			_, _ = (&retry.Transport{Base: base, Policy: p}).RoundTrip(newGet(t, "http://x/"))
		})
		require.Zero(t, sent)
	}
}

// TestReview2RetryOverBreakerOpenTimes: retry.Transport over a breaker.Transport
// waits out a breaker's open time when it is within MaxRetryAfter (a short
// OpenTimeout: the trial goes, and succeeds), and fails at once, with an
// error that matches breaker.ErrOpen, when it is beyond (the default 30s,
// forced open or not); a refusal beyond it spends no Budget.
func TestReview2RetryOverBreakerOpenTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			name    string
			open    time.Duration
			force   bool
			waits   bool
			settled time.Duration // the wait, when it waits
		}{
			{"OpenTimeout 5s", 5 * time.Second, false, true, 5 * time.Second},
			{"OpenTimeout 10s", 10 * time.Second, false, true, 10 * time.Second},
			{"OpenTimeout 11s", 11 * time.Second, false, false, 0},
			{"default OpenTimeout", 0, false, false, 0},
			{"forced open, default OpenTimeout", 0, true, false, 0},
		} {
			down := true
			sent := 0
			base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				sent++
				if down {
					return nil, errors.New("connection refused")
				}
				return response(200, nil, newBody("ok")), nil
			})
			br := &breaker.Transport{Base: base, Settings: breaker.Settings{FailureThreshold: 1, OpenTimeout: c.open}}
			budget := retry.NewBudget(0, 0.1) // one retry in its window
			tr := &retry.Transport{Base: br, Policy: retry.Policy{MaxAttempts: 1, Budget: budget}}
			_, err := tr.RoundTrip(newGet(t, "http://api.example/")) // opens the breaker
			require.Error(t, err)
			if c.force {
				br.Breaker("api.example").ForceOpen()
			}
			down = false
			tr.Policy.MaxAttempts = 3
			start := time.Now()
			resp, err := tr.RoundTrip(newGet(t, "http://api.example/"))
			took := time.Since(start)
			if c.waits {
				require.NoError(t, err, c.name)
				require.Equal(t, 200, resp.StatusCode)
				require.Equal(t, c.settled, took, c.name)
				require.Equal(t, 2, sent, c.name)
				_ = resp.Body.Close()
				continue
			}
			require.Nil(t, resp, c.name)
			require.ErrorIs(t, err, breaker.ErrOpen, c.name)
			rerr := asError(t, err)
			require.Equal(t, retry.MaxRetryAfterExceeded, rerr.Reason, c.name)
			require.Equal(t, 1, rerr.Attempts, c.name)
			require.Zero(t, took, c.name)
			require.Equal(t, 1, sent, c.name)
			// The Budget's one retry is still there.
			calls := 0
			require.NoError(t, retry.Policy{Budget: budget, NoDelay: true}.Execute(context.Background(), failing(1, errFail, &calls)), c.name)
		}
	})
}
