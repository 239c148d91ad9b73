package breaker_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
)

// TestEdge16NilOpenError: a nil *OpenError's methods do not panic. It is no
// refusal: Error says it is nil, RetryAfter is 0, and it matches nothing,
// not even ErrOpen, alone or wrapped.
func TestEdge16NilOpenError(t *testing.T) {
	var e *breaker.OpenError
	require.Equal(t, "breaker: <nil *OpenError>", e.Error())
	require.Zero(t, e.RetryAfter())
	require.False(t, e.Is(breaker.ErrOpen))
	var err error = e
	require.False(t, errors.Is(err, breaker.ErrOpen))
	require.False(t, errors.Is(fmt.Errorf("w: %w", err), breaker.ErrOpen))
	require.Equal(t, "w: breaker: <nil *OpenError>", fmt.Errorf("w: %w", err).Error())
	var target *breaker.OpenError
	require.True(t, errors.As(err, &target))
	require.Nil(t, target)
	// The zero OpenError, not nil, still is a refusal.
	require.True(t, errors.Is(&breaker.OpenError{}, breaker.ErrOpen))
}
