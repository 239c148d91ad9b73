package breaker_test

// External: retry imports pool, which imports breaker, so an internal test
// of breaker cannot import retry.

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/retry"
)

// TestStatusErrorIsRetrysToo: breaker.StatusError and retry.StatusError are
// one type, so a program stacking the Transports matches a status with
// either name.
func TestStatusErrorIsRetrysToo(t *testing.T) {
	var err error = fmt.Errorf("wrapped: %w", &breaker.StatusError{StatusCode: 503, Status: "503 Service Unavailable"})
	var se *retry.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 503, se.StatusCode)
	require.Equal(t, time.Duration(0), se.RetryAfter(), "breaker's leaves Delay at 0")
}
