package ctxsyncotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestGlobalProvider: without WithMeterProvider the instruments come from
// the global provider; made before otel.SetMeterProvider, they report to
// the provider set later, as the global one promises.
func TestGlobalProvider(t *testing.T) {
	before := otel.GetMeterProvider()
	t.Cleanup(func() { otel.SetMeterProvider(before) })

	m, err := ctxsyncotel.NewBreakerMetrics("early")
	if err != nil {
		t.Fatal(err)
	}
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	otel.SetMeterProvider(mp)

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
	if got := c.point(t, "ctxsync.breaker.calls", breakerNameOf("early"), outcome("success")); got != 1 {
		t.Errorf("calls{success} = %d, want 1", got)
	}
	if got := c.point(t, "ctxsync.breaker.state", breakerNameOf("early"), state("closed")); got != 1 {
		t.Errorf("state{closed} = %d, want 1", got)
	}
}
