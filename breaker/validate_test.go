package breaker

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestSettingsValidate: every Settings New refuses, Validate reports, with
// the message New panics with; every Settings New takes, Validate accepts.
func TestSettingsValidate(t *testing.T) {
	bad := []Settings{
		{FailureRateThreshold: -1},
		{FailureRateThreshold: 101},
		{FailureRateThreshold: math.NaN()},
		{SlowCallRateThreshold: 50},
		{SlowCallRateThreshold: math.Inf(1), SlowCallDuration: time.Second},
		{OpenTimeout: -1},
		{WindowDuration: math.MinInt64},
		{SlowCallDuration: -time.Nanosecond},
		{WindowSize: -1},
		{HalfOpenMaxCalls: -1},
		{SuccessThreshold: -1},
		{MinimumCalls: -1},
		{WindowBuckets: -1},
		{Jitter: 1.5},
		{Jitter: math.NaN()},
		{WindowSize: maxWindowSize + 1},
		{WindowBuckets: maxWindowBuckets + 1},
	}
	for _, s := range bad {
		err := s.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "breaker: ") {
			t.Errorf("Validate(%+v) = %v, want an error naming the package", s, err)
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != err.Error() {
					t.Errorf("New(%+v) panicked with %v, want %q", s, r, err)
				}
			}()
			New(s)
		}()
	}
	good := []Settings{
		{},
		{FailureThreshold: -1, FailureRateThreshold: 50},
		{FailureRateThreshold: 100, SlowCallRateThreshold: 0.001, SlowCallDuration: 1},
		{OpenTimeout: math.MaxInt64, Jitter: 1, WindowSize: maxWindowSize, WindowBuckets: maxWindowBuckets},
	}
	for _, s := range good {
		if err := s.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", s, err)
		}
		New(s)
	}
}
