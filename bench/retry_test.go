package bench

import (
	"context"
	"testing"

	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/ctxsync/ctxsync/retry"
)

// retryImpl runs a call through a retry policy of 3 attempts in all, with no
// wait between them.
type retryImpl struct {
	name string
	// wrap returns fn called through the policy, under ctx. It is called
	// once per benchmark: what it builds (options, closures) is set-up a
	// user would do once too.
	wrap func(ctx context.Context, fn func(context.Context) error) func() error
}

var retryImpls = []retryImpl{
	{
		name: "ctxsync",
		wrap: func(ctx context.Context, fn func(context.Context) error) func() error {
			p := retry.Policy{NoDelay: true}
			return func() error { return p.Execute(ctx, fn) }
		},
	},
	{
		name: "cenkalti-backoff",
		wrap: func(ctx context.Context, fn func(context.Context) error) func() error {
			op := func() (struct{}, error) { return struct{}{}, fn(ctx) }
			opts := []backoff.RetryOption{backoff.WithBackOff(&backoff.ZeroBackOff{}), backoff.WithMaxTries(3)}
			return func() error {
				_, err := backoff.Retry(ctx, op, opts...)
				return err
			}
		},
	},
	{
		name: "failsafe-go",
		wrap: func(ctx context.Context, fn func(context.Context) error) func() error {
			ex := failsafe.With[any](retrypolicy.NewBuilder[any]().WithMaxAttempts(3).Build())
			run := func() error { return fn(ctx) }
			return func() error { return ex.Run(run) }
		},
	},
}

// BenchmarkRetry: a call that succeeds at once (the cost of the retry
// machinery on the path every healthy call takes), and one that fails twice
// then succeeds, with no wait between attempts.
func BenchmarkRetry(b *testing.B) {
	for _, c := range []struct {
		name  string
		fails int
	}{{"success", 0}, {"fail-twice", 2}} {
		for _, impl := range retryImpls {
			b.Run("case="+c.name+"/impl="+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				n := 0
				fn := func(context.Context) error {
					if n++; n%(c.fails+1) != 0 {
						return errBench
					}
					return nil
				}
				call := impl.wrap(benchCtx(b), fn)
				for b.Loop() {
					must(call())
				}
			})
		}
	}
}
