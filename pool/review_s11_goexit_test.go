package pool

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBackgroundCheckGoexitKeepsTheSweep: the background HealthCheck runs
// in the pool's goroutine, and a check that called runtime.Goexit (a test's
// t.FailNow in a HealthCheck, say) ended that goroutine silently: no check
// ran again, MinIdle was never topped up, and Close found the goroutine gone.
// The pool is left whole, as for a check that fails: the sweep carries on.
func TestBackgroundCheckGoexitKeepsTheSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var checks atomic.Int32
		var made atomic.Int32
		p := mustNew(t, Config[int]{
			New: func(context.Context) (int, error) { return int(made.Add(1)), nil },
			HealthCheck: func(context.Context, int) error {
				if checks.Add(1) == 1 {
					runtime.Goexit()
				}
				return nil
			},
			HealthCheckSkip:   NoHealthCheckSkip,
			HealthCheckPeriod: time.Minute,
			MinIdle:           1,
			MaxSize:           2,
		})
		synctest.Wait() // the first sweep makes the MinIdle resource
		time.Sleep(time.Minute)
		synctest.Wait() // its check, which calls Goexit
		require.Equal(t, int32(1), checks.Load())
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		require.GreaterOrEqual(t, checks.Load(), int32(3), "the background checks stopped after a check called Goexit")
		s := p.Stats()
		require.Equal(t, 1, s.Idle, "MinIdle: %+v", s)
		require.NoError(t, p.Close(context.Background()))
	})
}
