package breaker

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// Regression: a time-based window shorter, in nanoseconds, than its number
// of buckets was made of buckets of 1ns each, one per WindowBuckets: a
// WindowDuration of 1ns with the default 10 buckets looked at the calls of
// the last 10ns, and with 1<<16 buckets at those of the last 65µs, where
// Settings promises "the calls of the last WindowDuration". The failures
// below, long out of such a window, still counted, and opened the breaker.
// Right: the window holds no call older than WindowDuration (fewer
// buckets, of 1ns each, when it is that short).
func TestReviewPB11_TinyTimeWindowHoldsWindowDuration(t *testing.T) {
	for _, buckets := range []int{0, 1 << 16} {
		for _, d := range []time.Duration{1, 3} {
			synctest.Test(t, func(t *testing.T) {
				b := New(Settings{
					FailureRateThreshold: 50, MinimumCalls: 2,
					WindowDuration: d, WindowBuckets: buckets,
				})
				ctx := t.Context()
				require.Error(t, b.Execute(ctx, fail))
				time.Sleep(d + 1) // that failure has left the window
				require.Equal(t, 0, b.Metrics().WindowCalls,
					"WindowDuration %v, WindowBuckets %d: a call older than the window is in it", d, buckets)
				require.Error(t, b.Execute(ctx, fail))
				require.Equal(t, Closed, b.State(),
					"WindowDuration %v, WindowBuckets %d: opened on a failure out of the window", d, buckets)
			})
		}
	}
}
