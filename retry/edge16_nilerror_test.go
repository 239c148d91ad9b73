package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// TestEdge16NilErrorPointers: a nil *Error, and a nil *StatusError (the
// type retry.Transport, breaker.Transport and adaptive.Transport share), are
// errors whose methods do not panic: Error says what they are, Unwrap gives
// nothing, RetryAfter 0, and errors.Is, errors.As and fmt see through them
// without a nil dereference, also inside a chain of wraps and in the retry
// loop that looks at an attempt's error.
func TestEdge16NilErrorPointers(t *testing.T) {
	var e *retry.Error
	require.Equal(t, "retry: <nil *Error>", e.Error())
	require.Nil(t, e.Unwrap())
	var err error = e
	require.False(t, errors.Is(err, context.Canceled))
	var target *retry.Error
	require.True(t, errors.As(err, &target))
	require.Nil(t, target)
	require.Equal(t, "wrapped: retry: <nil *Error>", fmt.Errorf("wrapped: %w", err).Error())
	require.False(t, errors.Is(fmt.Errorf("wrapped: %w", err), context.Canceled))

	var se *retry.StatusError
	require.Equal(t, "ctxsync: <nil *StatusError>", se.Error())
	require.Zero(t, se.RetryAfter())
	require.Equal(t, "ctxsync: <nil *StatusError>", fmt.Sprint(error(se)))
	var bse *breaker.StatusError = se // the same type
	require.Equal(t, se.Error(), bse.Error())

	// An attempt that fails with such an error, or with a nil
	// *breaker.OpenError or *ratelimit.DeadlineError (which have a
	// RetryAfter), is retried as any other: the loop's look at its
	// RetryAfter, its Is and its Unwrap does not panic.
	var oe *breaker.OpenError
	var de *ratelimit.DeadlineError
	for _, bad := range []error{e, se, oe, de, fmt.Errorf("w: %w", e), errors.Join(se, errors.New("x")), fmt.Errorf("w: %w", oe), errors.Join(de, oe)} {
		calls := 0
		got := retry.Policy{NoDelay: true, MaxAttempts: 2}.Execute(context.Background(), func(context.Context) error {
			calls++
			return bad
		})
		require.Equal(t, 2, calls)
		var re *retry.Error
		require.True(t, errors.As(got, &re))
		require.Equal(t, retry.MaxAttemptsReached, re.Reason)
		require.Contains(t, got.Error(), "<nil *")
	}
}
