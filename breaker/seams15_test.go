package breaker_test

import (
	"context"
	"testing"

	"github.com/ctxsync/ctxsync/breaker"
)

// TestSeams15_DoDropsTheValueWhenOnCallPanics pins what Do's doc says: a
// panic of the breaker's own functions after fn has returned goes on to the
// caller, and fn's value with it is dropped; the breaker is whole, and a
// caller that must close the value notes it in fn.
func TestSeams15_DoDropsTheValueWhenOnCallPanics(t *testing.T) {
	b := breaker.New(breaker.Settings{OnCall: func(e breaker.CallEvent) {
		if e.Outcome == breaker.Success {
			panic("OnCall")
		}
	}})
	var made *int
	func() {
		defer func() {
			if p := recover(); p != "OnCall" {
				t.Fatalf("recovered %v, want OnCall's panic", p)
			}
		}()
		v, err := breaker.Do(context.Background(), b, func(context.Context) (*int, error) {
			made = new(int)
			return made, nil
		})
		t.Fatalf("Do returned %v, %v after OnCall panicked", v, err)
	}()
	if made == nil {
		t.Fatal("fn did not run")
	}
	if c := b.Counts(); c.Successes != 1 || c.Requests != 1 {
		t.Fatalf("counts after the panic: %+v; the call should count once, as a success", c)
	}
	if s := b.State(); s != breaker.Closed {
		t.Fatalf("state %v", s)
	}
}
