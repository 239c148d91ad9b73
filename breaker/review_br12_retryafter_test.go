package breaker

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// Regression: RetryAfter says "the rest of the open time", which is never
// more than the opening's length; but for a breaker opened outside a
// testing/synctest bubble and refusing inside one (before a refusal reads
// the clock and finds the opening over, as Breaker's doc allows), it
// measured Until, set on the process's clock, against the bubble's, which
// starts in 2000: a RetryAfter of decades, and retry.Transport, which gives
// up on a RetryAfter beyond its MaxRetryAfter, failed at once on a breaker
// whose opening was a minute long, or already over. Right: RetryAfter is at
// most the opening's length.
func TestRetryAfterAtMostTheOpening(t *testing.T) {
	b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Minute})
	require.Error(t, b.Execute(context.Background(), fail))
	require.Equal(t, Open, b.State())
	synctest.Test(t, func(t *testing.T) {
		err := b.Execute(context.Background(), func(context.Context) error { return nil })
		// Refused without a look at the clock: the opening's timer, a
		// minute away less a tenth, has not fired.
		var oe *OpenError
		require.True(t, errors.As(err, &oe), "Execute = %v, want a refusal", err)
		require.LessOrEqual(t, oe.RetryAfter(), time.Minute, "RetryAfter of a refusal, opening of a minute")
	})
}
