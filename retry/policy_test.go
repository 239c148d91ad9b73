package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/retry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errFail = errors.New("fail")

// failing returns a fn that fails its first n attempts with err, then
// succeeds, and counts its attempts in *calls.
func failing(n int, err error, calls *int) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= n {
			return err
		}
		return nil
	}
}

// recorder is an OnRetry that records its arguments.
type recorder struct {
	attempts []int
	errs     []error
	delays   []time.Duration
}

func (r *recorder) onRetry(attempt int, err error, delay time.Duration) {
	r.attempts = append(r.attempts, attempt)
	r.errs = append(r.errs, err)
	r.delays = append(r.delays, delay)
}

func asError(t *testing.T, err error) *retry.Error {
	t.Helper()
	var rerr *retry.Error
	require.ErrorAs(t, err, &rerr)
	return rerr
}

func TestSuccessAtOnce(t *testing.T) {
	var calls int
	var rec recorder
	err := retry.Policy{OnRetry: rec.onRetry}.Execute(context.Background(), failing(0, errFail, &calls))
	require.NoError(t, err)
	require.Equal(t, 1, calls)
	require.Empty(t, rec.attempts)
}

// TestBackoffNoJitter: the waits grow by Multiplier from InitialDelay and
// stop at MaxDelay; OnRetry gets the number of the attempt that failed, and
// the virtual time that passes is their sum.
func TestBackoffNoJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		var rec recorder
		p := retry.Policy{
			MaxAttempts: 7, InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second,
			Jitter: retry.NoJitter, OnRetry: rec.onRetry,
		}
		start := time.Now()
		err := p.Execute(context.Background(), failing(6, errFail, &calls))
		require.NoError(t, err)
		ms := time.Millisecond
		require.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms}, rec.delays)
		require.Equal(t, []int{1, 2, 3, 4, 5, 6}, rec.attempts)
		require.Equal(t, 3500*ms, time.Since(start))
		require.Equal(t, 7, calls)
	})
}

func TestZeroPolicyDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		var rec recorder
		err := retry.Policy{OnRetry: rec.onRetry}.Execute(context.Background(), failing(10, errFail, &calls))
		rerr := asError(t, err)
		require.Equal(t, 3, calls)
		require.Equal(t, 3, rerr.Attempts)
		require.Equal(t, retry.MaxAttemptsReached, rerr.Reason)
		require.Len(t, rec.delays, 2)
		// Full jitter: up to 100ms, then up to 200ms.
		require.LessOrEqual(t, rec.delays[0], 100*time.Millisecond)
		require.LessOrEqual(t, rec.delays[1], 200*time.Millisecond)
	})
}

// TestMultiplierOneIsConstant: Multiplier 1 gives the same wait each time.
func TestMultiplierOneIsConstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		var rec recorder
		p := retry.Policy{MaxAttempts: 4, InitialDelay: 30 * time.Millisecond, Multiplier: 1, Jitter: retry.NoJitter, OnRetry: rec.onRetry}
		require.NoError(t, p.Execute(context.Background(), failing(3, errFail, &calls)))
		ms := 30 * time.Millisecond
		require.Equal(t, []time.Duration{ms, ms, ms}, rec.delays)
	})
}

// TestNoHiddenCapOnTotalTime: with no limit of attempts or time, a policy
// keeps going for as long as it is told, hours of (virtual) waits.
func TestNoHiddenCapOnTotalTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		p := retry.Policy{MaxAttempts: retry.NoLimit, InitialDelay: time.Minute, MaxDelay: time.Hour, Jitter: retry.NoJitter}
		start := time.Now()
		require.NoError(t, p.Execute(context.Background(), failing(200, errFail, &calls)))
		require.Equal(t, 201, calls)
		require.Greater(t, time.Since(start), 100*time.Hour)
	})
}

// TestNoDelay: NoDelay retries at once, and a RetryAfter floor still holds.
func TestNoDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		var rec recorder
		start := time.Now()
		p := retry.Policy{MaxAttempts: 5, NoDelay: true, OnRetry: rec.onRetry}
		require.NoError(t, p.Execute(context.Background(), failing(4, errFail, &calls)))
		require.Equal(t, time.Duration(0), time.Since(start))
		require.Equal(t, []time.Duration{0, 0, 0, 0}, rec.delays)

		calls = 0
		err := p.Execute(context.Background(), failing(1, retryAfterErr(time.Second), &calls))
		require.NoError(t, err)
		require.Equal(t, time.Second, time.Since(start))
	})
}

func TestDoReturnsValue(t *testing.T) {
	calls := 0
	v, err := retry.Do(context.Background(), retry.Policy{NoDelay: true}, func(context.Context) (int, error) {
		calls++
		if calls < 3 {
			return -calls, errFail
		}
		return 42, nil
	})
	require.NoError(t, err)
	require.Equal(t, 42, v)

	// Giving up: the last attempt's value and error.
	v, err = retry.Do(context.Background(), retry.Policy{NoDelay: true, MaxAttempts: 2}, func(context.Context) (int, error) {
		return 7, errFail
	})
	require.ErrorIs(t, err, errFail)
	require.Equal(t, 7, v)
}

// TestSuccessAllocatesNothing: a call that succeeds at once allocates
// nothing, through Execute and Do, with or without a Budget.
func TestSuccessAllocatesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ok := func(context.Context) error { return nil }
	okv := func(context.Context) (int, error) { return 1, nil }
	for _, p := range []retry.Policy{{}, {Budget: retry.NewBudget(0.1, 1)}, {MaxElapsed: time.Second}} {
		require.Zero(t, testing.AllocsPerRun(100, func() { _ = p.Execute(ctx, ok) }))
		require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = retry.Do(ctx, p, okv) }))
	}
}

func retryAfterErr(d time.Duration) error { return &raError{d} }

type raError struct{ d time.Duration }

func (e *raError) Error() string             { return fmt.Sprintf("busy, retry after %v", e.d) }
func (e *raError) RetryAfter() time.Duration { return e.d }
