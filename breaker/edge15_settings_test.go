package breaker_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
)

// Settings at their edges (durations near math.MaxInt64 spread by the
// largest Jitter, counts at math.MaxInt, the widest and narrowest windows, a
// rate threshold just above 0) make a breaker that counts, opens and refuses
// with a RetryAfter that is never negative, inside a testing/synctest bubble
// and outside one.
func TestSettingsEdges(t *testing.T) {
	big := time.Duration(math.MaxInt64)
	cases := []breaker.Settings{
		{FailureThreshold: 1, OpenTimeout: big, Jitter: 1},
		{FailureThreshold: 1, OpenTimeout: big - 1, Jitter: 0.5},
		{FailureThreshold: 1, OpenTimeout: 1, Jitter: 1},
		{FailureThreshold: 1, OpenBackoff: breaker.ExponentialBackoff(1, big), Jitter: 1},
		{FailureThreshold: 1, OpenBackoff: func(int) time.Duration { return 0 }},
		{FailureThreshold: math.MaxInt},
		{FailureThreshold: 1, HalfOpenMaxCalls: math.MaxInt, SuccessThreshold: math.MaxInt, OpenTimeout: 1},
		{FailureRateThreshold: 100, MinimumCalls: 1, WindowSize: 1},
		{FailureRateThreshold: 1e-300, MinimumCalls: 1, WindowSize: 1},
		{FailureRateThreshold: 100, MinimumCalls: math.MaxInt, WindowDuration: big, WindowBuckets: 1 << 16},
		{FailureRateThreshold: 100, MinimumCalls: 1, WindowDuration: big, WindowBuckets: 1},
		{FailureRateThreshold: 100, MinimumCalls: 1, WindowDuration: 1, WindowBuckets: 1 << 16},
		{SlowCallRateThreshold: 100, SlowCallDuration: 1, MinimumCalls: 1, WindowDuration: 3, WindowBuckets: 2},
		{SlowCallRateThreshold: 100, SlowCallDuration: big, MinimumCalls: 1},
	}
	for i, s := range cases {
		for _, bubble := range []bool{false, true} {
			run := func() {
				b := breaker.New(s)
				for k := 0; k < 30; k++ {
					_ = b.Execute(context.Background(), func(context.Context) error {
						if bubble {
							time.Sleep(2 * time.Nanosecond) // a slow call, for SlowCallDuration of 1ns
						}
						return errors.New("x")
					})
					m := b.Metrics()
					var oe *breaker.OpenError
					err := b.Execute(context.Background(), func(context.Context) error { return nil })
					if errors.As(err, &oe) {
						if ra := oe.RetryAfter(); ra < 0 {
							t.Errorf("case %d: RetryAfter %v", i, ra)
						}
						_ = oe.Error()
					}
					if m.Counts.Requests < 0 || m.WindowCalls < 0 || m.FailureRate > 100 {
						t.Errorf("case %d: %+v", i, m)
					}
					if bubble {
						time.Sleep(time.Duration(k) * time.Millisecond)
					}
				}
				b.ForceOpen()
				b.Reset()
			}
			if bubble {
				synctest.Test(t, func(t *testing.T) { run() })
			} else {
				run()
			}
		}
	}
}
