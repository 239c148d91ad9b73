package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// edge16Down is a RoundTripper of the user's whose host is down.
type edge16Down struct{}

func (edge16Down) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, io.ErrUnexpectedEOF
}

func edge16Req(t *testing.T) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://h.example/", nil)
	require.NoError(t, err)
	return req
}

// edge16Mistakes are chains under a breaker.Transport with a mistake in one
// of the library's Transports, which panics with Check's message at each
// request.
func edge16Mistakes() map[string]http.RoundTripper {
	lim := func() ratelimit.Limiter { return ratelimit.NewTokenBucket(1e9, 1<<20) }
	return map[string]http.RoundTripper{
		"ratelimit without a limiter":   &ratelimit.Transport{},
		"ratelimit with both":           &ratelimit.Transport{Limiter: lim(), PerHost: ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket { return ratelimit.NewTokenBucket(1, 1) }, ratelimit.KeyedConfig{})},
		"ratelimit over a bad one":      &ratelimit.Transport{Limiter: lim(), Base: &ratelimit.Transport{}},
		"retry with a bad Policy":       &retry.Transport{Policy: retry.Policy{MaxAttempts: -2}},
		"adaptive without a Limiter":    &adaptive.Transport{},
		"adaptive over a bad ratelimit": &adaptive.Transport{Limiter: adaptive.New(adaptive.Config{}), Base: &ratelimit.Transport{}},
		"breaker with bad Settings":     &breaker.Transport{Settings: breaker.Settings{OpenTimeout: -1}},
		"retry over a nil Base":         &retry.Transport{Base: (*http.Transport)(nil)},
	}
}

// TestEdge16BreakerOverMistakes: a breaker.Transport over a chain with a
// mistake of one of the library's Transports panics, at every request, with
// the message Check gives, and counts no failure of the host: its breaker
// never opens, Counts.Failures stays 0, and OnCall hears of an ignored call
// whose error says the mistake. On main, each panic counted as a failure,
// and after FailureThreshold requests RoundTrip answered ErrOpen.
func TestEdge16BreakerOverMistakes(t *testing.T) {
	for name, base := range edge16Mistakes() {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var events []breaker.CallEvent
			b := &breaker.Transport{Base: base, Settings: breaker.Settings{
				FailureThreshold: 2,
				OnCall: func(e breaker.CallEvent) {
					mu.Lock()
					events = append(events, e)
					mu.Unlock()
				},
			}}
			want := b.Check()
			require.Error(t, want)
			for i := range 10 {
				require.Equal(t, want.Error(), rv15cPanic(func() { _, _ = b.RoundTrip(edge16Req(t)) }), "request %d", i)
			}
			br := b.Breaker("h.example")
			require.NotNil(t, br)
			require.Equal(t, breaker.Closed, br.State())
			c := br.Counts()
			require.Zero(t, c.Failures)
			require.Equal(t, int64(10), c.Ignored)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, events, 10)
			for _, e := range events {
				require.Equal(t, breaker.Ignored, e.Outcome)
				require.EqualError(t, e.Err, want.Error())
			}
		})
	}
}

// TestEdge16BreakerTrialOverMistake: a half-open breaker whose one trial
// slot goes to a request that meets a mistake under it gets the slot back:
// the next request is a trial, not refused with ErrOpen.
func TestEdge16BreakerTrialOverMistake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rl := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1e9, 1<<20), Base: edge16Down{}}
		b := &breaker.Transport{Base: rl, Settings: breaker.Settings{FailureThreshold: 1, OpenTimeout: time.Second, HalfOpenMaxCalls: 1}}
		_, err := b.RoundTrip(edge16Req(t))
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		_, err = b.RoundTrip(edge16Req(t))
		require.ErrorIs(t, err, breaker.ErrOpen)
		time.Sleep(time.Second)
		lim := rl.Limiter
		rl.Limiter = nil // the mistake, for one request
		want := b.Check()
		require.Error(t, want)
		require.Equal(t, want.Error(), rv15cPanic(func() { _, _ = b.RoundTrip(edge16Req(t)) }))
		require.Equal(t, breaker.HalfOpen, b.Breaker("h.example").State())
		rl.Limiter = lim
		_, err = b.RoundTrip(edge16Req(t))
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the trial slot was kept by the request that panicked")
		require.Equal(t, breaker.Open, b.Breaker("h.example").State())
	})
}

// TestEdge16BreakerCountsOtherPanics: a panic of a Base of the user's still
// counts as a failure of the host, also with a mistake further down that
// the panic is not (the user's Base panics before reaching it).
func TestEdge16BreakerCountsOtherPanics(t *testing.T) {
	for _, base := range []http.RoundTripper{
		&rv15cUserBase{err: errors.New("user: broken")},
		&ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1e9, 1<<20), Base: &rv15cUserBase{err: errors.New("user: broken")}},
		&ratelimit.Transport{
			PerHost: ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket { return ratelimit.NewTokenBucket(1e9, 1<<20) }, ratelimit.KeyedConfig{}),
			Key:     func(*http.Request) string { panic("user: Key") },
		},
		// A mistake under a Base of the user's is the user's Base's
		// business: not looked for.
		&rv15cPlain{rv15cUserBase{err: errors.New(fmt.Sprint((&ratelimit.Transport{}).Check()))}},
	} {
		b := &breaker.Transport{Base: base, Settings: breaker.Settings{FailureThreshold: 2}}
		for range 2 {
			require.NotNil(t, rv15cPanic(func() { _, _ = b.RoundTrip(edge16Req(t)) }))
		}
		_, err := b.RoundTrip(edge16Req(t))
		require.ErrorIs(t, err, breaker.ErrOpen, "%T", base)
	}
}

// TestEdge16RetryOverMistake: a retry.Transport over a chain with a mistake
// panics with Check's message, and the request, never sent, is not counted
// as a first attempt in the Policy's Budget, nor in the Hedge's: a Budget of
// ratio 1 and no reserve lets a later caller as many retries as first
// attempts made, not one more for each request that panicked. On main each
// panicking request counted, and raised the Budget's allowance.
func TestEdge16RetryOverMistake(t *testing.T) {
	for _, hedge := range []bool{false, true} {
		t.Run(fmt.Sprint("hedge=", hedge), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				budget := retry.NewBudget(1, 0)
				tr := &retry.Transport{Base: &ratelimit.Transport{}}
				if hedge {
					tr.Hedge = &retry.Hedge{Delay: time.Hour, Budget: budget}
				} else {
					tr.Policy.Budget = budget
				}
				want := tr.Check()
				require.Error(t, want)
				for i := range 10 {
					require.Equal(t, want.Error(), rv15cPanic(func() { _, _ = tr.RoundTrip(edge16Req(t)) }), "request %d", i)
				}
				// One first attempt of a Policy (or a hedged call) that
				// fails: with ratio 1, one retry (one copy) is let through.
				if hedge {
					var mu sync.Mutex
					calls := 0
					_, err := retry.DoHedged(context.Background(), retry.Hedge{Delay: time.Millisecond, MaxHedges: 5, Budget: budget}, func(ctx context.Context) (int, error) {
						mu.Lock()
						calls++
						mu.Unlock()
						time.Sleep(100 * time.Millisecond)
						return 0, errors.New("down")
					})
					require.Error(t, err)
					mu.Lock()
					defer mu.Unlock()
					require.Equal(t, 2, calls, "the first attempt and the one copy its deposit allows")
					return
				}
				calls := 0
				err := retry.Policy{NoDelay: true, MaxAttempts: 30, Budget: budget}.Execute(context.Background(), func(context.Context) error {
					calls++
					return errors.New("down")
				})
				var re *retry.Error
				require.ErrorAs(t, err, &re)
				require.Equal(t, retry.BudgetSpent, re.Reason)
				require.Equal(t, 2, calls, "the first attempt and the one retry its deposit allows")
			})
		})
	}
}

// TestEdge16AdaptiveOverMistake: an adaptive.Transport over a chain with a
// mistake panics with Check's message and gives its Ticket back unjudged:
// nothing in flight after, and the limit unchanged (no drop recorded).
func TestEdge16AdaptiveOverMistake(t *testing.T) {
	for name, base := range edge16Mistakes() {
		lim := adaptive.New(adaptive.Config{})
		limit := lim.Limit()
		tr := &adaptive.Transport{Limiter: lim, Base: base}
		want := tr.Check()
		require.Error(t, want, name)
		for range 20 {
			require.Equal(t, want.Error(), rv15cPanic(func() { _, _ = tr.RoundTrip(edge16Req(t)) }), name)
		}
		require.Zero(t, lim.InFlight(), name)
		require.Equal(t, limit, lim.Limit(), name)
	}
}

// TestEdge16HammerMistakeUnderBreaker: goroutines send requests, some with
// a ctx cancelled at random, through retry over adaptive over breaker over a
// ratelimit.Transport with no limiter. Each request panics with Check's
// message, or fails with its ctx's error if that ended first; the host's
// breaker never opens and counts no failure, the adaptive Limiter keeps no
// Ticket, and the retry Budget, shared with calls that fail for real,
// counts only those calls' first attempts.
func TestEdge16HammerMistakeUnderBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := retry.NewBudget(1, 0)
		lim := adaptive.New(adaptive.Config{})
		bt := &breaker.Transport{Base: &ratelimit.Transport{}, Settings: breaker.Settings{FailureThreshold: 1}}
		top := &retry.Transport{Policy: retry.Policy{Budget: budget, NoDelay: true}, Base: &adaptive.Transport{Limiter: lim, Base: bt}}
		want := top.Check()
		require.Error(t, want)
		const goroutines, each = 8, 50
		var wg sync.WaitGroup
		var mu sync.Mutex
		panics, cancelled, real := 0, 0, 0
		for g := range goroutines {
			wg.Go(func() {
				for i := range each {
					ctx, cancel := context.WithCancel(context.Background())
					if (g+i)%3 == 0 {
						cancel()
					}
					if (g+i)%7 == 0 {
						// A call of the Budget's own, failing for real:
						// its first attempt counts.
						_ = retry.Policy{Budget: budget, NoDelay: true, MaxAttempts: 1}.Execute(context.Background(), func(context.Context) error { return errors.New("down") })
						mu.Lock()
						real++
						mu.Unlock()
					}
					req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://h.example/", nil)
					require.NoError(t, err)
					var rerr error
					got := rv15cPanic(func() { _, rerr = top.RoundTrip(req) })
					cancel()
					mu.Lock()
					switch {
					case got != nil:
						require.Equal(t, want.Error(), got)
						panics++
					default:
						require.ErrorIs(t, rerr, context.Canceled)
						cancelled++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Equal(t, goroutines*each, panics+cancelled)
		require.NotZero(t, panics)
		br := bt.Breaker("h.example")
		require.NotNil(t, br)
		require.Equal(t, breaker.Closed, br.State())
		require.Zero(t, br.Counts().Failures)
		require.Equal(t, int64(panics), br.Counts().Ignored)
		require.Zero(t, lim.InFlight())
		// With ratio 1 and no reserve, the Budget lets as many retries as
		// first attempts it counted: the real calls' and the one below.
		retries := 0
		_ = retry.Policy{Budget: budget, NoDelay: true, MaxAttempts: 10 * goroutines * each, OnRetry: func(int, error, time.Duration) { retries++ }}.Execute(context.Background(), func(context.Context) error { return errors.New("down") })
		require.Equal(t, real+1, retries)
	})
}

// TestEdge16BreakerGoexitOverMistake: a Base that calls runtime.Goexit
// before the request reaches a mistake further down (a Cost of the user's,
// over a breaker.Transport with bad Settings): the Goexit goes on, ending
// the caller's goroutine as it would without the mistake, and counts as a
// failure of the host, as any Base's does; nothing is raised in its place.
func TestEdge16BreakerGoexitOverMistake(t *testing.T) {
	inner := &breaker.Transport{Settings: breaker.Settings{OpenTimeout: -1}}
	rl := &ratelimit.Transport{Limiter: ratelimit.NewTokenBucket(1e9, 1<<20), Base: inner,
		Cost: func(*http.Request) int { runtime.Goexit(); return 1 }}
	b := &breaker.Transport{Base: rl, Settings: breaker.Settings{FailureThreshold: 1}}
	require.Error(t, b.Check())
	done := make(chan any)
	go func() {
		finished := false
		defer func() {
			r := recover()
			if r == nil && !finished {
				r = "goexit"
			}
			done <- r
		}()
		_, _ = b.RoundTrip(edge16Req(t))
		finished = true
	}()
	require.Equal(t, "goexit", <-done)
	br := b.Breaker("h.example")
	require.NotNil(t, br)
	require.Equal(t, breaker.Open, br.State(), "the one failure opened it (and began new Counts)")
}
