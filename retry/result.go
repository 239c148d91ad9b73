package retry

import (
	"context"
	"errors"
	"time"
)

// ErrRetryResult is the error of an attempt that returned no error but a
// result that the retryIf of DoIf asked to retry. When the retries end on
// such an attempt, DoIf returns its value and an *Error whose Last is
// ErrRetryResult.
var ErrRetryResult = errors.New("retry: result asked for another attempt")

// DoIf is Do with a predicate that sees each attempt's value and error:
// retryIf(v, err) reports whether the attempt is to be retried, so that a
// result can ask for another attempt (a job not ready yet, an empty page
// from a replica behind) and an error can be refused one. failsafe-go's
// HandleResult and HandleIf, in one function.
//
// An attempt whose retryIf says false ends the call: with its value and a
// nil error if err is nil, or as an error that is not retryable otherwise
// (the *Error's Reason is NotRetryable, and errors.Is still sees err). One
// whose retryIf says true is a failure: its error, or ErrRetryResult if err
// is nil, goes through the Policy's rules as any attempt's would, so that
// Permanent errors, the caller's ctx errors and Policy.Retryable keep their
// word. DoIf returns the value and error of the last attempt made, the
// error as Execute returns it.
//
// retryIf runs in the caller's goroutine, outside any lock; a panic in it
// reaches the caller, and no more attempt is made. DoIf panics if ctx, fn
// or retryIf is nil, or if a field of p is out of range.
func DoIf[T any](ctx context.Context, p Policy, retryIf func(v T, err error) bool, fn func(ctx context.Context) (T, error)) (T, error) {
	if retryIf == nil {
		panic("retry: nil retryIf")
	}
	if fn == nil {
		panic("retry: nil function")
	}
	var v T
	err := p.Execute(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		switch {
		case !retryIf(v, err):
			return Permanent(err) // nil for nil: success
		case err == nil:
			return ErrRetryResult
		}
		return err
	})
	return v, err
}

// delay returns the wait after attempt n, which failed with err: from
// DelayFunc, or from the backoff.
func (p *Policy) delay(b *backoff, n int, err error) time.Duration {
	if p.DelayFunc == nil {
		return b.next()
	}
	return max(p.DelayFunc(n, err), 0)
}

// ctxDone is the Error of a call that the caller's ctx stopped after n
// attempts, the last failing with err: it keeps the ctx's cause, if the
// ctx was given one.
func ctxDone(ctx context.Context, n int, err, cerr error) *Error {
	e := &Error{Attempts: n, Last: err, Reason: ContextDone, Context: cerr}
	if cause := context.Cause(ctx); cause != nil && cause != cerr {
		e.Cause = cause
	}
	return e
}
