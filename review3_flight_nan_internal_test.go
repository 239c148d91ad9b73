package ctxsync

import (
	"context"
	"math"
	"testing"
)

// TestReview3_FlightNaNKeyLeavesCallBehind: a NaN key went into the map
// under a key never found again, so a finished call was never taken out: Len
// stayed up and the map grew by one entry per call. Do now panics for a key
// that does not equal itself, as KeyedLock does, and keeps nothing.
func TestReview3_FlightNaNKeyLeavesCallBehind(t *testing.T) {
	var f Flight[float64, int]
	for range 3 {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Fatal("Do with a NaN key did not panic")
				}
			}()
			f.Do(context.Background(), math.NaN(), func(context.Context) (int, error) { return 1, nil })
		}()
	}
	if n := f.Len(); n != 0 || len(f.calls) != 0 {
		t.Fatalf("Len() = %d, map %d after NaN-keyed calls; want 0", n, len(f.calls))
	}
}
