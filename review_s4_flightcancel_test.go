package ctxsync_test

import (
	"context"
	"testing"

	"github.com/ctxsync/ctxsync"
)

// Regression: finish hands the result out (resolved, ready) before it
// cancels fn's ctx, so a Do may return fn's result while the ctx that fn
// ran under, and kept, is still alive: Err nil, Done open, a ctx derived
// from it not ended. TestFlightCtxAfterEnd asserts the contrary right after
// Do and fails about once in 3,000 runs. The doc says the ctx is cancelled
// when fn returns; a caller that has fn's result must find it so (as
// errgroup's ctx is cancelled before Wait returns). Right: fn's ctx is
// cancelled before any Do returns the result.
func TestReviewS4_FlightCtxCancelledBeforeDoReturns(t *testing.T) {
	var f ctxsync.Flight[int, int]
	var kept context.Context
	fn := func(ctx context.Context) (int, error) {
		kept = ctx
		return 1, nil
	}
	for i := range 300000 {
		if _, err, _ := f.Do(context.Background(), i%3, fn); err != nil {
			t.Fatal(err)
		}
		if err := kept.Err(); err == nil {
			t.Fatalf("call %d: Do returned fn's result while fn's ctx was still alive (Err nil)", i)
		}
	}
}
