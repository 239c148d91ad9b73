package ctxsync_test

import (
	"context"
	"testing"
	"time"

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

// Regression: a ctx derived from fn's ctx in fn (context.WithCancel,
// WithTimeout) is cancelled by a function that flightCtx.AfterFunc
// registered, and cancel runs those in goroutines of their own: so when Do
// returns fn's result, and even once fn's ctx is done, the derived ctx may
// still be alive (in about 1.4% of calls here). flightCtx stands for
// context.WithCancel(context.WithoutCancel(ctx)), whose cancel ends every
// ctx derived from it before it returns. Right: a ctx derived from fn's ctx
// is done once fn's ctx is (the functions the context package registers
// take no lock of ours and run none of the caller's code, and may run in
// cancel's goroutine once its lock is released).
func TestReviewS4_FlightDerivedCtxCancelledWithFnCtx(t *testing.T) {
	var f ctxsync.Flight[int, int]
	for i := range 20000 {
		var child context.Context
		var cancel context.CancelFunc
		_, err, _ := f.Do(context.Background(), i%3, func(ctx context.Context) (int, error) {
			if i%2 == 0 {
				child, cancel = context.WithCancel(ctx)
			} else {
				child, cancel = context.WithTimeout(ctx, time.Hour)
			}
			return 1, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		alive := child.Err() == nil
		cancel()
		if alive {
			t.Fatalf("call %d: Do returned fn's result while a ctx derived from fn's ctx in fn was still alive", i)
		}
	}
}
