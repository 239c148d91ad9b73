package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/retry"
	"github.com/stretchr/testify/require"
)

// rv14ShutdownError says, by an Is method and without wrapping it, that it
// is the closed sentinel target: the way breaker.OpenError is ErrOpen.
type rv14ShutdownError struct{ target error }

func (e *rv14ShutdownError) Error() string        { return "store shut down" }
func (e *rv14ShutdownError) Is(target error) bool { return target == e.target }

// TestRV14_ClosedByIsMethodIsNotRetried pins a defect: retry told a closed
// sentinel by its type, so an error that is ctxsync.ErrClosed or
// pool.ErrClosed for errors.Is through an Is method (the device the library
// itself uses for breaker.OpenError and ErrOpen) was retried, backoff and
// all, though its caller sees errors.Is(err, ctxsync.ErrClosed) hold; inside
// errors.Join it was not retried before the shared closed type came, and
// was after. Right: whatever errors.Is calls a closed sentinel is not
// retried, bare, wrapped or joined.
func TestRV14_ClosedByIsMethodIsNotRetried(t *testing.T) {
	for _, target := range []error{ctxsync.ErrClosed, pool.ErrClosed} {
		own := &rv14ShutdownError{target: target}
		for name, err := range map[string]error{
			"bare":    own,
			"wrapped": fmt.Errorf("fetch: %w", own),
			"joined":  errors.Join(errors.New("other"), own),
		} {
			t.Run(target.Error()+"/"+name, func(t *testing.T) {
				require.ErrorIs(t, err, target)
				synctest.Test(t, func(t *testing.T) {
					n := 0
					got := retry.Policy{}.Execute(t.Context(), func(context.Context) error {
						n++
						return err
					})
					require.Equal(t, 1, n, "attempts for %v", got)
					var re *retry.Error
					require.ErrorAs(t, got, &re)
					require.Equal(t, retry.NotRetryable, re.Reason)
				})
			})
		}
	}
	// An Is method that matches something else is retried as before.
	other := &rv14ShutdownError{target: errors.ErrUnsupported}
	synctest.Test(t, func(t *testing.T) {
		n := 0
		_ = retry.Policy{}.Execute(t.Context(), func(context.Context) error { n++; return other })
		require.Equal(t, 3, n)
	})
}
