package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/retry"
)

func TestDoIfRetriesOnResult(t *testing.T) {
	n := 0
	v, err := retry.DoIf(context.Background(), retry.Policy{MaxAttempts: 5, NoDelay: true},
		func(v string, err error) bool { return err == nil && v == "pending" },
		func(context.Context) (string, error) {
			n++
			if n < 3 {
				return "pending", nil
			}
			return "done", nil
		})
	require.NoError(t, err)
	require.Equal(t, "done", v)
	require.Equal(t, 3, n)
}

func TestDoIfGivesUpOnResult(t *testing.T) {
	v, err := retry.DoIf(context.Background(), retry.Policy{MaxAttempts: 2, NoDelay: true},
		func(v string, err error) bool { return v == "pending" },
		func(context.Context) (string, error) { return "pending", nil })
	require.Equal(t, "pending", v, "the last attempt's value")
	require.ErrorIs(t, err, retry.ErrRetryResult)
	var rerr *retry.Error
	require.ErrorAs(t, err, &rerr)
	require.Equal(t, retry.MaxAttemptsReached, rerr.Reason)
	require.Equal(t, 2, rerr.Attempts)
}

func TestDoIfRefusesError(t *testing.T) {
	n := 0
	_, err := retry.DoIf(context.Background(), retry.Policy{NoDelay: true},
		func(_ int, err error) bool { return !errors.Is(err, errHedge) },
		func(context.Context) (int, error) { n++; return 0, errHedge })
	require.ErrorIs(t, err, errHedge)
	var rerr *retry.Error
	require.ErrorAs(t, err, &rerr)
	require.Equal(t, retry.NotRetryable, rerr.Reason)
	require.Equal(t, 1, n)
}

// retryIf cannot make the caller's ctx errors or Permanent ones retryable.
func TestDoIfKeepsPolicyRules(t *testing.T) {
	n := 0
	_, err := retry.DoIf(context.Background(), retry.Policy{NoDelay: true},
		func(int, error) bool { return true },
		func(context.Context) (int, error) { n++; return 0, retry.Permanent(errHedge) })
	require.ErrorIs(t, err, errHedge)
	require.Equal(t, 1, n)
}

func TestDoIfPanicsAndMisuse(t *testing.T) {
	fn := func(context.Context) (int, error) { return 1, nil }
	requirePanics(t, func() { _, _ = retry.DoIf(context.Background(), retry.Policy{}, nil, fn) })
	requirePanics(t, func() {
		_, _ = retry.DoIf[int](context.Background(), retry.Policy{}, func(int, error) bool { return false }, nil)
	})
	require.PanicsWithValue(t, "pred", func() {
		_, _ = retry.DoIf(context.Background(), retry.Policy{}, func(int, error) bool { panic("pred") }, fn)
	})
}

func TestPolicyDelayFunc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		schedule := []time.Duration{time.Second, -5, 3 * time.Second}
		var got []time.Duration
		p := retry.Policy{
			MaxAttempts: 4,
			NoDelay:     true, // DelayFunc wins over it
			DelayFunc:   func(attempt int, err error) time.Duration { return schedule[attempt-1] },
			OnRetry:     func(_ int, _ error, d time.Duration) { got = append(got, d) },
		}
		start := time.Now()
		err := p.Execute(t.Context(), func(context.Context) error { return errHedge })
		require.ErrorIs(t, err, errHedge)
		require.Equal(t, []time.Duration{time.Second, 0, 3 * time.Second}, got, "a negative wait is 0")
		require.Equal(t, 4*time.Second, time.Since(start))
	})
}

func TestPolicyDelayFuncMaxDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		p := retry.Policy{DelayFunc: func(int, error) time.Duration { return time.Duration(1<<63 - 1) }}
		err := p.Execute(ctx, func(context.Context) error { return errHedge })
		var rerr *retry.Error
		require.ErrorAs(t, err, &rerr)
		require.Equal(t, retry.DeadlineReached, rerr.Reason)
	})
}

func TestErrorKeepsCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := errors.New("shutting down")
		ctx, cancel := context.WithCancelCause(t.Context())
		p := retry.Policy{InitialDelay: time.Second, Jitter: retry.NoJitter}
		go func() {
			time.Sleep(500 * time.Millisecond)
			cancel(cause)
		}()
		err := p.Execute(ctx, func(context.Context) error { return errHedge })
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, cause)
		require.ErrorIs(t, err, errHedge)
		var rerr *retry.Error
		require.ErrorAs(t, err, &rerr)
		require.Same(t, cause, rerr.Cause)
		require.Contains(t, rerr.Error(), "shutting down")
	})
	// Without a cause of its own, Cause stays nil.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := retry.Policy{NoDelay: true}.Execute(ctx, func(context.Context) error {
		n++
		cancel()
		return errHedge
	})
	var rerr *retry.Error
	require.ErrorAs(t, err, &rerr)
	require.Nil(t, rerr.Cause)
	require.Equal(t, 1, n)
}
