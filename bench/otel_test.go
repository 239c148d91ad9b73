package bench

import (
	"context"
	"strconv"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

// The cost of OpenTelemetry metrics. impl=ctxsync-otel is a pool with the
// hooks of extra/ctxsyncotel on the SDK's MeterProvider (a manual reader:
// the exporter does not matter to the hot path, which only aggregates),
// given the pool's name; impl=ctxsync-otel-own-name the hooks made with no
// name, which read it from each event; their peer impl=no-hooks is the same
// pool without them, so that the report's ratio is what the hooks cost.

func otelPoolHooks(name string) func(b *testing.B) pool.Hooks {
	return func(b *testing.B) pool.Hooks {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
		m, err := ctxsyncotel.NewPoolMetrics(name, ctxsyncotel.WithMeterProvider(mp))
		if err != nil {
			b.Fatal(err)
		}
		return m.Hooks(pool.Hooks{})
	}
}

var otelImpls = []struct {
	name  string
	hooks func(*testing.B) pool.Hooks
}{
	{"ctxsync-otel", otelPoolHooks("db")},
	{"ctxsync-otel-own-name", otelPoolHooks("")},
	{"no-hooks", func(*testing.B) pool.Hooks { return pool.Hooks{} }},
}

// BenchmarkOtelPoolAcquireRelease: Acquire then Release of an idle resource,
// as BenchmarkPoolAcquireRelease, with and without the hooks; and 16
// goroutines sharing 4 resources, where Acquires wait and the hooks record
// the wait.
func BenchmarkOtelPoolAcquireRelease(b *testing.B) {
	for _, impl := range otelImpls {
		b.Run("run=serial/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			op := acquireRelease(newMetricsPool(b, 4, impl.hooks(b)))
			ctx := benchCtx(b)
			op(ctx) // make the resource
			b.ResetTimer()
			for b.Loop() {
				op(ctx)
			}
		})
		b.Run("run=parallel/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			op := acquireRelease(newMetricsPool(b, 64, impl.hooks(b)))
			ctx := benchCtx(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op(ctx)
				}
			})
		})
		b.Run("goroutines=16/size=4/impl="+impl.name, func(b *testing.B) {
			inGoroutines(b, 16, acquireRelease(newMetricsPool(b, 4, impl.hooks(b))))
		})
	}
}

// BenchmarkOtelBreakerExecute: a call that succeeds through a closed
// breaker, with ctxsyncotel's OnCall and OnStateChange (given the breaker's
// name, or made with none) and without them.
// With OnCall set, the breaker reads the clock twice per call for its
// duration, whoever the hook is (see BenchmarkHooksBreaker).
func BenchmarkOtelBreakerExecute(b *testing.B) {
	for _, impl := range []string{"ctxsync-otel", "ctxsync-otel-own-name", "no-hooks"} {
		newBreaker := func(b *testing.B) *breaker.Breaker {
			s := breaker.Settings{Name: "b"}
			if impl != "no-hooks" {
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
				name := "b"
				if impl == "ctxsync-otel-own-name" {
					name = "" // the breaker's own
				}
				m, err := ctxsyncotel.NewBreakerMetrics(name, ctxsyncotel.WithMeterProvider(mp))
				must(err)
				s.OnCall = m.OnCall(nil)
				s.OnStateChange = m.OnStateChange(nil)
			}
			return breaker.New(s)
		}
		b.Run("run=serial/impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			br := newBreaker(b)
			ctx := benchCtx(b)
			for b.Loop() {
				must(br.Execute(ctx, okCall))
			}
		})
		b.Run("run=parallel/impl="+impl, func(b *testing.B) {
			b.ReportAllocs()
			br := newBreaker(b)
			ctx := benchCtx(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					must(br.Execute(ctx, okCall))
				}
			})
		})
	}
}

// BenchmarkOtelCollect: a manual reader's Collect of 100 observed pools,
// each with a resource made and used, their hooks' histograms included.
func BenchmarkOtelCollect(b *testing.B) {
	b.ReportAllocs()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	for i := range 100 {
		m, err := ctxsyncotel.NewPoolMetrics("pool"+strconv.Itoa(i), ctxsyncotel.WithMeterProvider(mp))
		must(err)
		p := newMetricsPool(b, 4, m.Hooks(pool.Hooks{}))
		acquireRelease(p)(context.Background())
		reg, err := m.Observe(p)
		must(err)
		b.Cleanup(func() { _ = reg.Unregister() })
	}
	var rm metricdata.ResourceMetrics
	for b.Loop() {
		must(reader.Collect(context.Background(), &rm))
	}
}
