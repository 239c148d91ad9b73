package retry_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/ctxsync/ctxsync/retry"
)

// TestPolicyValidate: Validate reports what Execute panics on, with the
// same message, and accepts what Execute takes.
func TestPolicyValidate(t *testing.T) {
	bad := []retry.Policy{
		{MaxAttempts: -2},
		{MaxAttempts: math.MinInt},
		{MaxElapsed: -1},
		{InitialDelay: -1},
		{MaxDelay: math.MinInt64},
		{MaxRetryAfter: -1},
		{AttemptTimeout: -1},
		{Multiplier: math.NaN()},
		{Multiplier: 0.5},
		{Multiplier: math.Inf(-1)},
		{Jitter: retry.NoJitter + 1},
		{Jitter: -1},
		{Budget: &retry.Budget{}},
	}
	for _, p := range bad {
		err := p.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "retry: ") {
			t.Errorf("Validate(%+v) = %v, want an error naming the package", p, err)
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != err.Error() {
					t.Errorf("Execute with %+v panicked with %v, want %q", p, r, err)
				}
			}()
			_ = p.Execute(context.Background(), func(context.Context) error { return nil })
		}()
	}
	good := []retry.Policy{
		{},
		{MaxAttempts: retry.NoLimit, MaxElapsed: math.MaxInt64, Multiplier: 1, Jitter: retry.NoJitter},
		{MaxAttempts: math.MaxInt, Multiplier: math.Inf(1), Budget: retry.NewBudget(0.1, 1)},
	}
	for _, p := range good {
		if err := p.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", p, err)
		}
		if err := p.Execute(context.Background(), func(context.Context) error { return nil }); err != nil {
			t.Errorf("Execute with %+v = %v, want nil", p, err)
		}
	}
}
