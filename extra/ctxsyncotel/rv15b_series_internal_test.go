package ctxsyncotel

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync"
)

// seriesOf returns how many series of provider the table of what keeps.
func (t *seriesTables) seriesOf(what string, provider metric.MeterProvider) int {
	s := t.of(what)
	s.mu.Lock()
	defer s.mu.Unlock()
	id := sourceOf(provider)
	n := 0
	for key := range s.m {
		if key.provider == id {
			n++
		}
	}
	return n
}

// refusedProvider gives Meters whose RegisterCallback fails.
type refusedProvider struct{ metric.MeterProvider }

func (p *refusedProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return refusedMeter{p.MeterProvider.Meter(name, opts...)}
}

type refusedMeter struct{ metric.Meter }

func (refusedMeter) RegisterCallback(metric.Callback, ...metric.Observable) (metric.Registration, error) {
	return nil, errors.New("refused")
}

// TestRV15bGaugeSeriesGoWithTheirLastRegistration: the Observe functions of
// gauges keep, for each series, its registrations in force, and nothing
// once none is: there is no count to carry on. Observing a semaphore under
// names of their own, made anew and ended one after the other (a name per
// request, per tenant, per reload), kept an entry for each name for as long
// as the MeterProvider lived: a million Observe and Unregister pairs held
// some 250 MB. So did Observe calls the Meter refused.
func TestRV15bGaugeSeriesGoWithTheirLastRegistration(t *testing.T) {
	const n = 1000
	sdk := sdkmetric.NewMeterProvider()
	defer sdk.Shutdown(context.Background())
	opt := WithMeterProvider(sdk)
	s := ctxsync.NewSemaphore(1)
	for i := range n {
		reg, err := ObserveSemaphore("s"+strconv.Itoa(i), s, opt)
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
	}
	if k := gaugeSeries.seriesOf("semaphore", sdk); k != 0 {
		t.Errorf("%d series kept after %d Observe and Unregister pairs under names of their own, want none", k, n)
	}
	refused := &refusedProvider{sdk}
	for i := range n {
		if _, err := ObserveLock("l"+strconv.Itoa(i), ctxsync.NewLock(), WithMeterProvider(refused)); err == nil {
			t.Fatal("ObserveLock with a refusing Meter succeeded")
		}
	}
	if k := gaugeSeries.seriesOf("lock", refused); k != 0 {
		t.Errorf("%d series kept after %d refused Observe calls, want none", k, n)
	}
}
