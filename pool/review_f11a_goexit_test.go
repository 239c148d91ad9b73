package pool

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReviewF11a_BackgroundCheckGoexitToldAsNotReturned: since ac10c7f a
// background HealthCheck that calls runtime.Goexit counts as failed, and
// Hooks.OnHealthCheckFail is told of it; but with "pool: HealthCheck
// panicked", though nothing panicked: a user reading the log hunts for a
// panic that never was. Right, as for New (errNewPanicked): an error that
// says the check panicked or did not return.
func TestReviewF11a_BackgroundCheckGoexitToldAsNotReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var told []error
		p := mustNew(t, Config[int]{
			New: func(context.Context) (int, error) { return 1, nil },
			HealthCheck: func(context.Context, int) error {
				runtime.Goexit()
				return nil
			},
			Hooks: Hooks{OnHealthCheckFail: func(err error) {
				mu.Lock()
				told = append(told, err)
				mu.Unlock()
			}},
			HealthCheckSkip:   NoHealthCheckSkip,
			HealthCheckPeriod: time.Minute,
			MinIdle:           1,
			MaxSize:           1,
		})
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.NoError(t, p.Close(context.Background()))
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, told, "OnHealthCheckFail was not told of the check that called Goexit")
		for _, err := range told {
			require.Contains(t, err.Error(), "did not return", "OnHealthCheckFail told %q of a check that called runtime.Goexit", err)
		}
	})
}
