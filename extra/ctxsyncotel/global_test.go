package ctxsyncotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// globalSet records that a test has set the global MeterProvider: the
// global one forwards instruments made before the first
// otel.SetMeterProvider of the process only, so a run with -count above 1
// can check that once.
var globalSet bool

// TestGlobalProvider: without WithMeterProvider the instruments come from
// the global provider; made before the first otel.SetMeterProvider, they
// report to the provider set then, as the global one promises.
func TestGlobalProvider(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })

	name := "late"
	var m *ctxsyncotel.BreakerMetrics
	var err error
	if !globalSet {
		name = "early"
		m, err = ctxsyncotel.NewBreakerMetrics(name)
		if err != nil {
			t.Fatal(err)
		}
	}
	otel.SetMeterProvider(mp)
	globalSet = true
	if m == nil {
		m, err = ctxsyncotel.NewBreakerMetrics(name)
		if err != nil {
			t.Fatal(err)
		}
	}

	b := breaker.New(breaker.Settings{OnCall: m.OnCall(nil)})
	reg, err := m.Observe(b)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	if err := b.Execute(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	c := collect(t, r)
	if got := c.point(t, "ctxsync.breaker.calls", breakerNameOf(name), outcome("success")); got != 1 {
		t.Errorf("calls{success} = %d, want 1", got)
	}
	if got := c.point(t, "ctxsync.breaker.state", breakerNameOf(name), state("closed")); got != 1 {
		t.Errorf("state{closed} = %d, want 1", got)
	}
	if got := c.hist(t, "ctxsync.breaker.call.duration", breakerNameOf(name), outcome("success")).Count; got != 1 {
		t.Errorf("call.duration{success} count = %d, want 1", got)
	}
}
