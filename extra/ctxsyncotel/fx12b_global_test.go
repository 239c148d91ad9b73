package ctxsyncotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestWatchVersionCarriesOnThroughTheGlobalProvider pins a defect of the
// counters kept per MeterProvider: without WithMeterProvider, an Observe
// function takes otel.GetMeterProvider(), which is the global delegating
// provider before the first otel.SetMeterProvider and the provider set
// after it. Both report to the same series of the same SDK provider, but
// ObserveWatch kept its counters per provider value, so a Watch observed
// at start-up (before the provider was set) and one made anew on a reload
// (after) had counters of their own: the version fell from 10 to 1 on the
// same series, as before counters were kept at all. The right behaviour, as
// ObserveWatch's doc says: a Watch observed under the name once the
// registration of another ended adds its version to the count.
//
// It needs the global provider unset, so it runs before TestGlobalProvider
// (its file sorts first) and only once a process.
func TestWatchVersionCarriesOnThroughTheGlobalProvider(t *testing.T) {
	if globalSet {
		t.Skip("the global MeterProvider was set earlier in this process; it delegates only once")
	}
	const name = "fx12b-global"
	w1 := ctxsync.NewWatch(0)
	for i := range 9 {
		w1.Store(i + 1)
	}
	reg, err := ctxsyncotel.ObserveWatch(name, w1) // the global provider, not yet set
	if err != nil {
		t.Fatal(err)
	}
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	otel.SetMeterProvider(mp)
	globalSet = true
	if got := collect(t, r).point(t, "ctxsync.watch.version", attrString("ctxsync.watch.name", name)); got != 10 {
		t.Fatalf("version = %d with the first Watch, want 10", got)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}

	reg, err = ctxsyncotel.ObserveWatch(name, ctxsync.NewWatch(0)) // the provider set, now the global one
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	if got := collect(t, r).point(t, "ctxsync.watch.version", attrString("ctxsync.watch.name", name)); got < 10 {
		t.Errorf("version = %d with a new Watch observed after the global provider was set, want at least 10 (it fell)", got)
	}
}
