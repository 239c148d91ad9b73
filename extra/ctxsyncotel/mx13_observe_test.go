package ctxsyncotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// panickingProvider gives Meters whose RegisterCallback panics while
// panics is set, and works as the SDK's otherwise.
type panickingProvider struct {
	metric.MeterProvider
	panics bool
}

func (p *panickingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &panickingMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

type panickingMeter struct {
	metric.Meter
	p *panickingProvider
}

func (m *panickingMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	if m.p.panics {
		panic(meterPanic)
	}
	return m.Meter.RegisterCallback(f, insts...)
}

func newPanickingProvider(t *testing.T) (*sdkmetric.ManualReader, *panickingProvider) {
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	return r, &panickingProvider{MeterProvider: sdk}
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if v := recover(); v != meterPanic {
			t.Errorf("%s panicked with %v, want the meter's panic", what, v)
		}
	}()
	f()
}

// TestMX13ObserveAfterTheMeterPanicked pins a defect of PoolMetrics,
// BreakerMetrics and LimiterMetrics.Observe: each marks the metrics
// observed before it registers its callback, and a Meter whose
// RegisterCallback panicked left them marked for good, with no
// registration to Unregister, so that every later Observe failed with
// "observed already": the metrics were lost to the program for one panic
// of the user's MeterProvider. The right behaviour: a panic of the Meter
// goes on to the caller and leaves the metrics as they were, free for the
// next Observe.
func TestMX13ObserveAfterTheMeterPanicked(t *testing.T) {
	_, p := newPanickingProvider(t)
	opt := ctxsyncotel.WithMeterProvider(p)
	pm, err := ctxsyncotel.NewPoolMetrics("db", opt)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := ctxsyncotel.NewBreakerMetrics("b", opt)
	if err != nil {
		t.Fatal(err)
	}
	lm, err := ctxsyncotel.NewLimiterMetrics("api", opt)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := pool.New(pool.Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close(context.Background())
	b := breaker.New(breaker.Settings{})
	tally := new(ratelimit.Tally)
	observe := map[string]func() (metric.Registration, error){
		"PoolMetrics.Observe":    func() (metric.Registration, error) { return pm.Observe(pl) },
		"BreakerMetrics.Observe": func() (metric.Registration, error) { return bm.Observe(b) },
		"LimiterMetrics.Observe": func() (metric.Registration, error) { return lm.Observe(tally) },
	}
	p.panics = true
	for what, f := range observe {
		mustPanic(t, what, func() { _, _ = f() })
	}
	p.panics = false
	for what, f := range observe {
		reg, err := f()
		if err != nil {
			t.Errorf("%s after the Meter panicked = %v, want a registration", what, err)
			continue
		}
		_ = reg.Unregister()
	}
}
