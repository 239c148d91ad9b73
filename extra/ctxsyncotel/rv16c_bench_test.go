package ctxsyncotel_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// freshMeterProvider gives a new Meter at each call.
type freshMeterProvider struct{ metric.MeterProvider }

func (p *freshMeterProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return struct{ metric.Meter }{p.MeterProvider.Meter(name, opts...)}
}

// BenchmarkRV16cCollect1000: one collection of 1,000 semaphores and 1,000
// Watches, each under a name of its own. CTXSYNC_BENCH_GLOBAL chooses the
// state of the global provider: "" untouched; "keyed" one series observed
// through it, not set; "untried" one series observed through it, then set
// to a provider whose Meters are new at each call (the delegate never
// found); "learned" one series observed through it, then set to the
// provider of the benchmark.
func BenchmarkRV16cCollect1000(b *testing.B) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	mode := os.Getenv("CTXSYNC_BENCH_GLOBAL")
	if mode != "" {
		g, err := ctxsyncotel.ObserveSemaphore("global", ctxsync.NewSemaphore(1))
		if err != nil {
			b.Fatal(err)
		}
		defer g.Unregister()
		switch mode {
		case "untried":
			otel.SetMeterProvider(&freshMeterProvider{sdkmetric.NewMeterProvider()})
		case "learned":
			otel.SetMeterProvider(mp)
		}
	}
	opt := ctxsyncotel.WithMeterProvider(mp)
	var regs []metric.Registration
	for i := range 1000 {
		rs, err := ctxsyncotel.ObserveSemaphore("s"+strconv.Itoa(i), ctxsync.NewSemaphore(3), opt)
		if err != nil {
			b.Fatal(err)
		}
		rw, err := ctxsyncotel.ObserveWatch("w"+strconv.Itoa(i), ctxsync.NewWatch(0), opt)
		if err != nil {
			b.Fatal(err)
		}
		regs = append(regs, rs, rw)
	}
	defer func() {
		for _, r := range regs {
			_ = r.Unregister()
		}
	}()
	var rm metricdata.ResourceMetrics
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Collect(context.Background(), &rm); err != nil {
			b.Fatal(err)
		}
	}
}
