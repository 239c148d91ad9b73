package ctxsyncotel_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// refusingProvider gives Meters whose RegisterCallback, while refuse is set,
// calls during (with the registration under way) and then fails.
type refusingProvider struct {
	metric.MeterProvider
	refuse bool
	during func()
}

func (p *refusingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &refusingMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

type refusingMeter struct {
	metric.Meter
	p *refusingProvider
}

func (m *refusingMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	if m.p.refuse {
		m.p.refuse = false
		m.p.during()
		return nil, errors.New("refused")
	}
	return m.Meter.RegisterCallback(f, insts...)
}

// TestObserveWatchFailedBesideAnother: an ObserveWatch whose registration
// fails while another ObserveWatch under the name succeeds must leave the
// other's counter reported. The failed one put the name's counters back as
// they were before it, the source of the other, observed meanwhile, with
// them: the other's registration was then taken for one of an earlier
// source, and reported no version at all.
func TestObserveWatchFailedBesideAnother(t *testing.T) {
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	p := &refusingProvider{MeterProvider: sdk}
	opt := ctxsyncotel.WithMeterProvider(p)
	w1, w2 := ctxsync.NewWatch(0), ctxsync.NewWatch(0)
	w2.Store(1)
	w2.Store(2) // version 3
	var reg metric.Registration
	p.refuse = true
	p.during = func() {
		var err error
		reg, err = ctxsyncotel.ObserveWatch("config", w2, opt)
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ctxsyncotel.ObserveWatch("config", w1, opt); err == nil {
		t.Fatal("ObserveWatch with a refusing Meter succeeded")
	}
	defer reg.Unregister()
	if got := collect(t, r).point(t, "ctxsync.watch.version", ctxsyncotel.WatchNameKey.String("config")); got != 3 {
		t.Errorf("ctxsync.watch.version = %d, want 3", got)
	}
}

// valueWatch is a WatchSource that is not a pointer, as a user's wrapper
// type may be.
type valueWatch struct{ v *uint64 }

func (w valueWatch) Version() uint64 { return *w.v }

// TestObserveWatchTwoValueSourcesAtOnce: two WatchSources that are not
// pointers, observed under one name at once, cannot be told apart by what
// they are. Both were counted: the SDK added their versions up, and the sum
// fell when one registration ended; with the counters carried on, each
// collection took the other's smaller version for a reset, and the counter
// climbed at every collection with no Store at all. The right behaviour:
// the registration made last is the one counted, the counter stays put while
// nothing is stored, and never falls.
func TestObserveWatchTwoValueSourcesAtOnce(t *testing.T) {
	r, opt := newProvider(t)
	last := map[string]float64{}
	v1, v2 := uint64(10), uint64(1)
	reg1, err := ctxsyncotel.ObserveWatch("config", valueWatch{&v1}, opt)
	if err != nil {
		t.Fatal(err)
	}
	review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "first source, 10")
	reg2, err := ctxsyncotel.ObserveWatch("config", valueWatch{&v2}, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Unregister()
	const key = "ctxsync.watch.version{ctxsync.watch.name=config}"
	review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "both sources")
	was := last[key]
	for range 3 {
		review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "both sources, nothing stored")
	}
	if last[key] != was {
		t.Errorf("%s went from %v to %v with nothing stored", key, was, last[key])
	}
	_ = reg1.Unregister()
	review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "second source alone")
}
