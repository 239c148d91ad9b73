package retry_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/retry"
)

// requirePanics requires f to panic with a message that begins "retry:".
func requirePanics(t *testing.T, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		s, ok := r.(string)
		require.True(t, ok && strings.HasPrefix(s, "retry: "), "panic %#v, want a string beginning \"retry: \"", r)
	}()
	f()
}

func TestMisusePanics(t *testing.T) {
	ok := func(context.Context) error { return nil }
	bad := map[string]retry.Policy{
		"MaxAttempts -2":         {MaxAttempts: -2},
		"MaxAttempts MinInt":     {MaxAttempts: math.MinInt},
		"MaxElapsed -1":          {MaxElapsed: -1},
		"InitialDelay -1":        {InitialDelay: -1},
		"InitialDelay MinInt64":  {InitialDelay: math.MinInt64},
		"MaxDelay -1":            {MaxDelay: -1},
		"AttemptTimeout -1":      {AttemptTimeout: -1},
		"MaxRetryAfter -1":       {MaxRetryAfter: -1},
		"MaxRetryAfter MinInt64": {MaxRetryAfter: math.MinInt64},
		"Multiplier 0.5":         {Multiplier: 0.5},
		"Multiplier -1":          {Multiplier: -1},
		"Multiplier -Inf":        {Multiplier: math.Inf(-1)},
		"Multiplier NaN":         {Multiplier: math.NaN()},
		"Multiplier tiny":        {Multiplier: math.SmallestNonzeroFloat64},
		"Jitter -1":              {Jitter: -1},
		"Jitter 4":               {Jitter: 4},
	}
	for name, p := range bad {
		t.Run(name, func(t *testing.T) {
			calls := 0
			f := func(context.Context) error { calls++; return nil }
			requirePanics(t, func() { _ = p.Execute(context.Background(), f) })
			requirePanics(t, func() { _, _ = retry.Do(context.Background(), p, func(context.Context) (int, error) { return 0, nil }) })
			tr := &retry.Transport{Policy: p, Base: roundTripperFunc(nil)}
			requirePanics(t, func() { _, _ = tr.RoundTrip(newGet(t, "http://x/")) })
			require.Zero(t, calls, "fn ran under a bad policy")
		})
	}
	// A policy is checked even when the ctx is already done.
	requirePanics(t, func() { _ = retry.Policy{MaxAttempts: -2}.Execute(cancelled(), ok) })
	t.Run("nil ctx", func(t *testing.T) {
		requirePanics(t, func() {
			//lint:ignore SA1012 a nil Context is the misuse under test
			_ = retry.Policy{}.Execute(nil, ok)
		})
		requirePanics(t, func() {
			//lint:ignore SA1012 a nil Context is the misuse under test
			_, _ = retry.Do(nil, retry.Policy{}, func(context.Context) (int, error) { return 0, nil })
		})
	})
	t.Run("nil fn", func(t *testing.T) {
		requirePanics(t, func() { _ = retry.Policy{}.Execute(context.Background(), nil) })
		requirePanics(t, func() { _, _ = retry.Do[int](context.Background(), retry.Policy{}, nil) })
	})
	t.Run("NewBudget", func(t *testing.T) {
		for _, v := range []float64{-1, math.NaN(), math.Inf(1), math.Inf(-1), -math.SmallestNonzeroFloat64} {
			requirePanics(t, func() { retry.NewBudget(v, 1) })
			requirePanics(t, func() { retry.NewBudget(0.1, v) })
		}
	})
	t.Run("zero Budget", func(t *testing.T) {
		requirePanics(t, func() { _ = retry.Policy{Budget: &retry.Budget{}}.Execute(context.Background(), ok) })
	})
	// Extremes that are not misuse.
	for _, p := range []retry.Policy{
		{MaxAttempts: retry.NoLimit, NoDelay: true},
		{MaxAttempts: math.MaxInt},
		{Multiplier: 1}, {Multiplier: math.Inf(1)}, {Multiplier: math.MaxFloat64},
		{InitialDelay: 1, MaxDelay: 1, MaxElapsed: 1, AttemptTimeout: 1},
		{InitialDelay: math.MaxInt64, MaxDelay: math.MaxInt64, MaxElapsed: math.MaxInt64, AttemptTimeout: math.MaxInt64, MaxRetryAfter: math.MaxInt64},
		{MaxRetryAfter: 1},
		{Budget: retry.NewBudget(0, 0)}, {Budget: retry.NewBudget(math.MaxFloat64, math.MaxFloat64)},
	} {
		require.NoError(t, p.Execute(context.Background(), ok))
	}
}

// TestExtremeBudgets: a budget of 0 refuses every retry, a huge one none.
func TestExtremeBudgets(t *testing.T) {
	calls := 0
	err := retry.Policy{NoDelay: true, Budget: retry.NewBudget(0, 0)}.Execute(context.Background(), failing(5, errFail, &calls))
	require.Equal(t, retry.BudgetSpent, asError(t, err).Reason)
	require.Equal(t, 1, calls)
	calls = 0
	p := retry.Policy{NoDelay: true, MaxAttempts: 100, Budget: retry.NewBudget(math.MaxFloat64, math.MaxFloat64)}
	require.NoError(t, p.Execute(context.Background(), failing(50, errFail, &calls)))
	require.Equal(t, 51, calls)
}

// TestUserPanicsReachCaller: a panic in fn, Retryable or OnRetry reaches the
// caller of Execute; the policy and its budget go on working.
func TestUserPanicsReachCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retry.NewBudget(0, 100)
		base := retry.Policy{MaxAttempts: 3, InitialDelay: ms, Budget: b, AttemptTimeout: time.Second}
		cases := map[string]func(p *retry.Policy) func(context.Context) error{
			"fn first": func(*retry.Policy) func(context.Context) error {
				return func(context.Context) error { panic("boom") }
			},
			"fn later": func(*retry.Policy) func(context.Context) error {
				n := 0
				return func(context.Context) error {
					if n++; n == 2 {
						panic("boom")
					}
					return errFail
				}
			},
			"Retryable": func(p *retry.Policy) func(context.Context) error {
				p.Retryable = func(error) bool { panic("boom") }
				return func(context.Context) error { return errFail }
			},
			"OnRetry after a wait": func(p *retry.Policy) func(context.Context) error {
				n := 0
				p.OnRetry = func(int, error, time.Duration) {
					if n++; n == 2 {
						panic("boom")
					}
				}
				return func(context.Context) error { return errFail }
			},
		}
		for name, mk := range cases {
			p := base
			fn := mk(&p)
			func() {
				defer func() { require.Equal(t, "boom", recover(), name) }()
				_ = p.Execute(context.Background(), fn)
			}()
		}
		calls := 0
		require.NoError(t, base.Execute(context.Background(), failing(1, errFail, &calls)))
		synctest.Wait() // no timer or goroutine of the panicked calls is left to fire
	})
}

// TestCallbacksMayReenter: OnRetry and Retryable may call Execute with the
// same policy and budget: no lock is held around them.
func TestCallbacksMayReenter(t *testing.T) {
	b := retry.NewBudget(0, 100)
	inner := retry.Policy{NoDelay: true, Budget: b}
	p := inner
	p.Retryable = func(error) bool {
		return inner.Execute(context.Background(), func(context.Context) error { return nil }) == nil
	}
	p.OnRetry = func(int, error, time.Duration) {
		calls := 0
		_ = inner.Execute(context.Background(), failing(1, errFail, &calls))
	}
	calls := 0
	require.NoError(t, p.Execute(context.Background(), failing(2, errFail, &calls)))
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
