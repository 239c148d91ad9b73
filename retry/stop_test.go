package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/retry"
)

var ms = time.Millisecond

// constant is a policy that waits 100ms, 200ms, 400ms... without jitter.
func constant(attempts int) retry.Policy {
	return retry.Policy{MaxAttempts: attempts, InitialDelay: 100 * ms, Jitter: retry.NoJitter}
}

// TestWaitPastDeadlineNotStarted: a wait that would end after ctx's
// deadline is not started; Execute returns at once, the last error wrapped,
// and not context.DeadlineExceeded, since the ctx has not ended.
func TestWaitPastDeadlineNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 250*ms)
		defer cancel()
		var calls int
		start := time.Now()
		err := constant(10).Execute(ctx, failing(100, errFail, &calls))
		require.Equal(t, 100*ms, time.Since(start), "returned after the first wait, not at the deadline")
		rerr := asError(t, err)
		require.Equal(t, retry.DeadlineReached, rerr.Reason)
		require.Equal(t, 2, rerr.Attempts)
		require.Equal(t, 2, calls)
		require.ErrorIs(t, err, errFail)
		require.NotErrorIs(t, err, context.DeadlineExceeded)
	})
}

// TestWaitEndingAtDeadlineNotStarted: a wait that would end exactly at the
// deadline leaves no time for an attempt, and is not started either.
func TestWaitEndingAtDeadlineNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*ms)
		defer cancel()
		var calls int
		err := constant(10).Execute(ctx, failing(100, errFail, &calls))
		require.Equal(t, retry.DeadlineReached, asError(t, err).Reason)
		require.Equal(t, 1, calls)
	})
}

// TestMaxElapsed: a wait that would end at or past MaxElapsed since the
// start is not started.
func TestMaxElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		p := constant(-1)
		p.MaxElapsed = 650 * ms
		start := time.Now()
		err := p.Execute(context.Background(), failing(100, errFail, &calls))
		// Attempts at 0, 100, 300; the wait of 400 would end at 700.
		require.Equal(t, 300*ms, time.Since(start))
		rerr := asError(t, err)
		require.Equal(t, retry.MaxElapsedReached, rerr.Reason)
		require.Equal(t, 3, rerr.Attempts)
		require.ErrorIs(t, err, errFail)
	})
}

// TestCtxEndsDuringWait: the caller's ctx ending during a wait returns at
// once, with an error that matches both ctx.Err() and the last error.
func TestCtxEndsDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(150*ms, cancel)
		var calls int
		start := time.Now()
		err := constant(10).Execute(ctx, failing(100, errFail, &calls))
		require.Equal(t, 150*ms, time.Since(start))
		rerr := asError(t, err)
		require.Equal(t, retry.ContextDone, rerr.Reason)
		require.Equal(t, 2, rerr.Attempts)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, errFail)
		require.Equal(t, context.Canceled, rerr.Context)
	})
}

// TestCtxDeadlineDuringAttempt: the caller's deadline passing during an
// attempt stops the retries with DeadlineExceeded matched.
func TestCtxDeadlineDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*ms)
		defer cancel()
		calls := 0
		err := constant(10).Execute(ctx, func(ctx context.Context) error {
			calls++
			<-ctx.Done()
			return ctx.Err()
		})
		rerr := asError(t, err)
		require.Equal(t, retry.ContextDone, rerr.Reason)
		require.Equal(t, 1, calls)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// TestDoneCtxRunsNothing: a ctx done before the first attempt runs nothing
// and returns ctx.Err() itself, unwrapped.
func TestDoneCtxRunsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		dctx, dcancel := context.WithTimeout(context.Background(), 0)
		defer dcancel()
		b := retry.NewBudget(0, 0)
		for _, c := range []struct {
			ctx  context.Context
			want error
		}{{ctx, context.Canceled}, {dctx, context.DeadlineExceeded}} {
			calls := 0
			err := retry.Policy{Budget: b}.Execute(c.ctx, failing(0, nil, &calls))
			require.True(t, err == c.want, "Execute = %v, want %v itself", err, c.want)
			require.Zero(t, calls)
			_, err = retry.Do(c.ctx, retry.Policy{}, func(context.Context) (int, error) { calls++; return 1, nil })
			require.True(t, err == c.want, "Do = %v, want %v itself", err, c.want)
			require.Zero(t, calls)
		}
	})
}

// TestCallerCtxErrorsNotRetried: an attempt that fails because the caller's
// ctx ended is the last, whatever Retryable says.
func TestCallerCtxErrorsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		p := constant(10)
		p.Retryable = func(error) bool { return true }
		err := p.Execute(ctx, func(ctx context.Context) error {
			calls++
			cancel()
			return ctx.Err()
		})
		require.Equal(t, 1, calls)
		require.Equal(t, retry.ContextDone, asError(t, err).Reason)
		require.ErrorIs(t, err, context.Canceled)
	})
}

// TestAttemptTimeoutRetried: an attempt cut short by AttemptTimeout is
// retried, since the caller's ctx still has time; the attempt's ctx ends.
func TestAttemptTimeoutRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		p := constant(5)
		p.AttemptTimeout = 30 * ms
		var rec recorder
		p.OnRetry = rec.onRetry
		start := time.Now()
		err := p.Execute(context.Background(), func(ctx context.Context) error {
			calls++
			if calls < 3 {
				<-ctx.Done()
				return ctx.Err()
			}
			dl, ok := ctx.Deadline()
			require.True(t, ok)
			require.Equal(t, 30*ms, time.Until(dl))
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, 3, calls)
		require.ErrorIs(t, rec.errs[0], context.DeadlineExceeded)
		require.Equal(t, 30*ms+100*ms+30*ms+200*ms, time.Since(start))
	})
}

// TestPermanentNotRetried: Permanent, even wrapped, ends the retries, and
// comes back as a *retry.Error that errors.Is/As see through.
func TestPermanentNotRetried(t *testing.T) {
	inner := &raError{d: time.Second}
	for _, err := range []error{
		retry.Permanent(errFail),
		fmt.Errorf("call: %w", retry.Permanent(errFail)),
		errors.Join(errors.New("other"), retry.Permanent(errFail)),
	} {
		calls := 0
		consulted := false
		p := retry.Policy{NoDelay: true, Retryable: func(error) bool { consulted = true; return true }}
		got := p.Execute(context.Background(), failing(10, err, &calls))
		rerr := asError(t, got)
		require.Equal(t, retry.NotRetryable, rerr.Reason)
		require.Equal(t, 1, rerr.Attempts)
		require.Equal(t, 1, calls)
		require.ErrorIs(t, got, errFail)
		require.False(t, consulted, "Retryable consulted for a Permanent error")
	}
	perm := retry.Permanent(inner)
	var ra *raError
	require.ErrorAs(t, perm, &ra)
	require.Equal(t, inner.Error(), perm.Error())
	require.Nil(t, retry.Permanent(nil))
}

// TestRetryableSaysNo: Retryable false ends the retries after that attempt.
func TestRetryableSaysNo(t *testing.T) {
	errOther := errors.New("other")
	calls := 0
	p := retry.Policy{NoDelay: true, MaxAttempts: 10, Retryable: func(err error) bool { return !errors.Is(err, errOther) }}
	err := p.Execute(context.Background(), func(context.Context) error {
		calls++
		if calls < 3 {
			return errFail
		}
		return errOther
	})
	rerr := asError(t, err)
	require.Equal(t, retry.NotRetryable, rerr.Reason)
	require.Equal(t, 3, rerr.Attempts)
	require.ErrorIs(t, err, errOther)
}

// TestRetryAfterFloor: a RetryAfter() found through wrapping sets a floor on
// the next wait that wins over MaxDelay.
func TestRetryAfterFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		p := retry.Policy{MaxAttempts: 3, InitialDelay: 100 * ms, MaxDelay: time.Second, Jitter: retry.NoJitter, OnRetry: rec.onRetry}
		calls := 0
		start := time.Now()
		err := p.Execute(context.Background(), func(context.Context) error {
			calls++
			switch calls {
			case 1:
				return fmt.Errorf("wrapped: %w", retryAfterErr(5*time.Second))
			case 2:
				return retryAfterErr(time.Millisecond) // below the backoff: the backoff
			}
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, []time.Duration{5 * time.Second, 200 * ms}, rec.delays)
		require.Equal(t, 5200*ms, time.Since(start))
	})
}

// TestRetryAfterNeverPastDeadline: the floor never wins over ctx's deadline
// or MaxElapsed: they stop the retries at once.
func TestRetryAfterNeverPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		calls := 0
		err := constant(5).Execute(ctx, failing(5, retryAfterErr(5*time.Second), &calls))
		require.Equal(t, retry.DeadlineReached, asError(t, err).Reason)
		require.Equal(t, 1, calls)

		p := constant(5)
		p.MaxElapsed = 2 * time.Second
		calls = 0
		start := time.Now()
		err = p.Execute(context.Background(), failing(5, retryAfterErr(5*time.Second), &calls))
		require.Equal(t, retry.MaxElapsedReached, asError(t, err).Reason)
		require.Equal(t, 1, calls)
		require.Zero(t, time.Since(start))
	})
}

// TestBreakerOpenErrorRetryAfter: breaker.OpenError's RetryAfter sets the
// wait; a half-open refusal (RetryAfter 0) falls back on the backoff, so a
// caller never spins.
func TestBreakerOpenErrorRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New(breaker.Settings{FailureThreshold: 1, OpenTimeout: 3 * time.Second})
		var rec recorder
		p := retry.Policy{MaxAttempts: 3, InitialDelay: 100 * ms, Jitter: retry.NoJitter, OnRetry: rec.onRetry}
		calls := 0
		err := p.Execute(context.Background(), func(ctx context.Context) error {
			return b.Execute(ctx, func(context.Context) error { calls++; return errFail })
		})
		// Attempt 1 fails and opens the breaker; attempt 2 is refused, open
		// for 3s; attempt 3 is a trial that fails.
		require.ErrorIs(t, err, errFail)
		require.Equal(t, 2, calls)
		require.Equal(t, []time.Duration{100 * ms, 3*time.Second - 100*ms}, rec.delays)
		require.ErrorIs(t, rec.errs[1], breaker.ErrOpen)

		half := &breaker.OpenError{State: breaker.HalfOpen}
		require.Zero(t, half.RetryAfter())
		rec = recorder{}
		calls = 0
		_ = p.Execute(context.Background(), failing(2, half, &calls))
		require.Equal(t, []time.Duration{100 * ms, 200 * ms}, rec.delays)
	})
}

// TestErrorReportsAttemptsAndReason: Error's message, Unwrap and fields.
func TestErrorReportsAttemptsAndReason(t *testing.T) {
	calls := 0
	err := retry.Policy{NoDelay: true, MaxAttempts: 2}.Execute(context.Background(), failing(5, errFail, &calls))
	rerr := asError(t, err)
	require.Equal(t, &retry.Error{Attempts: 2, Last: errFail, Reason: retry.MaxAttemptsReached}, rerr)
	require.Equal(t, "retry: 2 attempts (max attempts reached): fail", err.Error())
	require.Equal(t, []error{errFail}, rerr.Unwrap())

	e := &retry.Error{Attempts: 1, Last: errFail, Reason: retry.ContextDone, Context: context.Canceled}
	require.Equal(t, "retry: 1 attempt (context done: context canceled): fail", e.Error())
	require.Equal(t, []error{errFail, context.Canceled}, e.Unwrap())
	require.Equal(t, "retry: 0 attempts (Reason(0)): <nil>", (&retry.Error{}).Error())
	require.Nil(t, (&retry.Error{}).Unwrap())
	for r := retry.MaxAttemptsReached; r <= retry.ContextDone; r++ {
		require.NotContains(t, r.String(), "Reason(")
	}
}

// asRetryAfter is an error that is none of the kinds Execute looks for, but
// turns into one through its As method, as errors.As allows.
type asRetryAfter struct{ d time.Duration }

func (e asRetryAfter) Error() string { return "as" }
func (e asRetryAfter) As(target any) bool {
	if p, ok := target.(*interface{ RetryAfter() time.Duration }); ok {
		*p = &raError{e.d}
		return true
	}
	return false
}

// TestRetryAfterFoundAsErrorsAsFindsIt: a RetryAfter in a tree of errors, or
// behind an As method, sets the floor too.
func TestRetryAfterFoundAsErrorsAsFindsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, err := range []error{
			errors.Join(errFail, retryAfterErr(3*time.Second)),
			fmt.Errorf("a: %w", fmt.Errorf("b: %w, %w", errFail, retryAfterErr(3*time.Second))),
			fmt.Errorf("wrapped: %w", asRetryAfter{3 * time.Second}),
		} {
			var rec recorder
			p := retry.Policy{MaxAttempts: 2, InitialDelay: ms, Jitter: retry.NoJitter, OnRetry: rec.onRetry}
			calls := 0
			require.NoError(t, p.Execute(context.Background(), failing(1, err, &calls)))
			require.Equal(t, []time.Duration{3 * time.Second}, rec.delays, "%v", err)
		}
	})
}

// TestFailedAttemptsAllocateNothing: a call that fails twice, then
// succeeds, with NoDelay, allocates nothing either.
func TestFailedAttemptsAllocateNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	fn := func(context.Context) error {
		if n++; n%3 != 0 {
			return errFail
		}
		return nil
	}
	wrapped := fmt.Errorf("w: %w", errFail)
	fnw := func(context.Context) error {
		if n++; n%3 != 0 {
			return wrapped
		}
		return nil
	}
	p := retry.Policy{NoDelay: true}
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = p.Execute(ctx, fn) }))
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = p.Execute(ctx, fnw) }))
}
