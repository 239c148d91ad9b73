package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"

	"github.com/ctxsync/ctxsync/breaker"
)

var errBench = errors.New("bench: failure")

func okCall(context.Context) error { return nil }

// breakerImpl runs a call through a circuit breaker.
type breakerImpl struct {
	name string
	// newClosed returns a closed breaker's call, newOpen an open one's.
	newClosed, newOpen func() func(ctx context.Context) error
}

func breakerImpls(rateWindow bool) []breakerImpl {
	ours := func(s breaker.Settings) func() func(context.Context) error {
		return func() func(context.Context) error {
			b := breaker.New(s)
			return func(ctx context.Context) error { return b.Execute(ctx, okCall) }
		}
	}
	ourSettings := breaker.Settings{}
	gbSettings := gobreaker.Settings{Name: "bench"}
	fsBuilder := func() circuitbreaker.Builder[any] {
		return circuitbreaker.NewBuilder[any]().WithFailureThreshold(5)
	}
	if rateWindow {
		ourSettings = breaker.Settings{FailureRateThreshold: 50, WindowSize: 100, MinimumCalls: 10}
		gbSettings.ReadyToTrip = func(c gobreaker.Counts) bool {
			return c.Requests >= 10 && c.TotalFailures*2 >= c.Requests
		}
		gbSettings.Interval = time.Minute // counts per interval: gobreaker's window
		fsBuilder = func() circuitbreaker.Builder[any] {
			return circuitbreaker.NewBuilder[any]().WithFailureThresholdRatio(50, 100)
		}
	}
	return []breakerImpl{
		{
			name:      "ctxsync",
			newClosed: ours(ourSettings),
			newOpen: func() func(context.Context) error {
				b := breaker.New(ourSettings)
				b.ForceOpen()
				return func(ctx context.Context) error { return b.Execute(ctx, okCall) }
			},
		},
		{
			name: "gobreaker",
			newClosed: func() func(context.Context) error {
				cb := gobreaker.NewCircuitBreaker[any](gbSettings)
				return func(ctx context.Context) error {
					_, err := cb.Execute(func() (any, error) { return nil, okCall(ctx) })
					return err
				}
			},
			newOpen: func() func(context.Context) error {
				s := gbSettings
				s.Timeout = time.Hour
				s.ReadyToTrip = func(gobreaker.Counts) bool { return true }
				cb := gobreaker.NewCircuitBreaker[any](s)
				_, _ = cb.Execute(func() (any, error) { return nil, errBench })
				return func(ctx context.Context) error {
					_, err := cb.Execute(func() (any, error) { return nil, okCall(ctx) })
					return err
				}
			},
		},
		{
			name: "failsafe-go",
			newClosed: func() func(context.Context) error {
				ex := failsafe.With[any](fsBuilder().Build())
				return func(ctx context.Context) error { return ex.Run(func() error { return okCall(ctx) }) }
			},
			newOpen: func() func(context.Context) error {
				cb := fsBuilder().WithDelay(time.Hour).Build()
				cb.Open()
				ex := failsafe.With[any](cb)
				return func(ctx context.Context) error { return ex.Run(func() error { return okCall(ctx) }) }
			},
		},
	}
}

// BenchmarkBreakerExecute: a call that succeeds through a closed breaker, in
// consecutive-failure mode and with a failure-rate window; serially and from
// every core.
func BenchmarkBreakerExecute(b *testing.B) {
	for _, mode := range []struct {
		name string
		rate bool
	}{{"consecutive", false}, {"rate-window", true}} {
		for _, impl := range breakerImpls(mode.rate) {
			b.Run("mode="+mode.name+"/run=serial/impl="+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				call := impl.newClosed()
				ctx := benchCtx(b)
				for b.Loop() {
					must(call(ctx))
				}
			})
			b.Run("mode="+mode.name+"/run=parallel/impl="+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				call := impl.newClosed()
				ctx := benchCtx(b)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						must(call(ctx))
					}
				})
			})
		}
	}
}

// BenchmarkBreakerRefuse: a call refused by an open breaker.
func BenchmarkBreakerRefuse(b *testing.B) {
	for _, impl := range breakerImpls(false) {
		b.Run("run=serial/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			call := impl.newOpen()
			ctx := benchCtx(b)
			for b.Loop() {
				if call(ctx) == nil {
					panic("bench: the open breaker let a call through")
				}
			}
		})
		b.Run("run=parallel/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			call := impl.newOpen()
			ctx := benchCtx(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if call(ctx) == nil {
						panic("bench: the open breaker let a call through")
					}
				}
			})
		})
	}
}
