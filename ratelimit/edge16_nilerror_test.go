package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// TestEdge16NilDeadlineError: a nil *DeadlineError's methods do not panic.
// It is no refused wait: Error says it is nil, RetryAfter is 0, Timeout
// false, and it wraps nothing, so that it matches neither
// ErrWouldExceedDeadline nor context.DeadlineExceeded.
func TestEdge16NilDeadlineError(t *testing.T) {
	var e *ratelimit.DeadlineError
	require.Equal(t, "ratelimit: <nil *DeadlineError>", e.Error())
	require.Zero(t, e.RetryAfter())
	require.False(t, e.Timeout())
	require.Nil(t, e.Unwrap())
	var err error = e
	require.False(t, errors.Is(err, ratelimit.ErrWouldExceedDeadline))
	require.False(t, errors.Is(fmt.Errorf("w: %w", err), context.DeadlineExceeded))
	require.Equal(t, "w: ratelimit: <nil *DeadlineError>", fmt.Errorf("w: %w", err).Error())
	// The zero DeadlineError, not nil, still is one.
	require.True(t, errors.Is(&ratelimit.DeadlineError{}, ratelimit.ErrWouldExceedDeadline))
}
