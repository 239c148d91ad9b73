package ctxsyncotel

import (
	"context"
	"errors"
	"runtime"
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

// goexitProvider gives Meters whose RegisterCallback panics, or calls
// runtime.Goexit if goexit.
type goexitProvider struct {
	metric.MeterProvider
	goexit bool
}

func (p *goexitProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return goexitMeter{p.MeterProvider.Meter(name, opts...), p.goexit}
}

type goexitMeter struct {
	metric.Meter
	goexit bool
}

func (m goexitMeter) RegisterCallback(metric.Callback, ...metric.Observable) (metric.Registration, error) {
	if m.goexit {
		runtime.Goexit()
	}
	panic("the Meter panicked")
}

// TestRV15bGaugeSeriesKeptWhileInForce: a gauge's series is kept while a
// registration is in force under it, through the end of the one whose
// callback reports it, and goes with the last; one whose Observe panicked
// or called runtime.Goexit in the Meter goes too. A Watch's series is kept
// after its last registration ended, as ObserveWatch's doc says, so that a
// Watch observed anew under the name carries the counter on.
func TestRV15bGaugeSeriesKeptWhileInForce(t *testing.T) {
	sdk := sdkmetric.NewMeterProvider()
	defer sdk.Shutdown(context.Background())
	opt := WithMeterProvider(sdk)
	first, err := ObserveQueue("q", ctxsync.NewQueue[int](0), opt)
	if err != nil {
		t.Fatal(err)
	}
	second, err := ObserveQueue("q", ctxsync.NewQueue[int](0), opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Unregister(); err != nil {
		t.Fatal(err)
	}
	if k := gaugeSeries.seriesOf("queue", sdk); k != 1 {
		t.Errorf("%d series kept with a registration in force, want 1", k)
	}
	if err := second.Unregister(); err != nil {
		t.Fatal(err)
	}
	if k := gaugeSeries.seriesOf("queue", sdk); k != 0 {
		t.Errorf("%d series kept once the last registration ended, want none", k)
	}
	for _, goexit := range []bool{false, true} {
		p := &goexitProvider{sdk, goexit}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { _ = recover() }()
			_, _ = ObserveFlight("f", new(ctxsync.Flight[int, int]), WithMeterProvider(p))
			t.Error("ObserveFlight returned")
		}()
		<-done
		if k := gaugeSeries.seriesOf("flight", p); k != 0 {
			t.Errorf("goexit %v: %d series kept after the Meter failed the only Observe, want none", goexit, k)
		}
	}
	w, err := ObserveWatch("w", ctxsync.NewWatch(0), opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Unregister(); err != nil {
		t.Fatal(err)
	}
	watchCounters.mu.Lock()
	n := 0
	for key := range watchCounters.m {
		if key.provider == sourceOf(sdk) {
			n++
		}
	}
	watchCounters.mu.Unlock()
	if n != 1 {
		t.Errorf("%d series of ObserveWatch kept after its last registration ended, want 1: its counter carries on", n)
	}
}
