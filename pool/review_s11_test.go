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

// TestWakeUpsCheckNothing: the wake-ups that top MinIdle up (a Destroy, an
// Acquire that takes the idle resources below it) ran a whole sweep, which
// health-checked every idle resource due for it, at each wake-up: with a
// Destroy a second, a pool whose HealthCheckPeriod was an hour checked its
// idle resources every second. A wake-up tops up, and only the period's
// sweep checks.
func TestWakeUpsCheckNothing(t *testing.T) {
	type acquireKey struct{}
	synctest.Test(t, func(t *testing.T) {
		var background atomic.Int32
		p := mustNew(t, Config[int]{
			New: func(context.Context) (int, error) { return 1, nil },
			HealthCheck: func(ctx context.Context, _ int) error {
				if ctx.Value(acquireKey{}) == nil {
					background.Add(1)
				}
				return nil
			},
			HealthCheckSkip:   NoHealthCheckSkip,
			HealthCheckPeriod: time.Hour,
			MinIdle:           2,
			MaxSize:           4,
		})
		synctest.Wait() // the first sweep makes the MinIdle resources
		ctx := context.WithValue(context.Background(), acquireKey{}, true)
		for range 5 {
			time.Sleep(time.Second)
			r, err := p.Acquire(ctx)
			require.NoError(t, err)
			r.Destroy()
			synctest.Wait()
			require.Equal(t, 2, p.Stats().Idle, "MinIdle topped up")
		}
		require.Zero(t, background.Load(), "background checks within the HealthCheckPeriod")
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Positive(t, background.Load(), "the period's sweep checks")
		require.NoError(t, p.Close(context.Background()))
	})
}
