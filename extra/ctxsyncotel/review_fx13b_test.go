package ctxsyncotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestReviewFx13b_FailedObserveAfterTheOneBeforeEndedLeavesTheOldestReporting
// pins a defect: under one series, X then A are in force (A reports); an
// ObserveSemaphore B begins (B would report), and while its registration is
// under way A ends, then B's registration fails. The failed Observe put the
// series back to the registration that reported before it, A, which had
// ended meanwhile: X, still in force, reported nothing from then on, and
// the semaphore vanished from the export. The newest registration in force
// must report: X.
func TestReviewFx13b_FailedObserveAfterTheOneBeforeEndedLeavesTheOldestReporting(t *testing.T) {
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	p := &refusingProvider{MeterProvider: sdk}
	opt := ctxsyncotel.WithMeterProvider(p)
	sx, sa, sb := ctxsync.NewSemaphore(3), ctxsync.NewSemaphore(5), ctxsync.NewSemaphore(7)
	x, err := ctxsyncotel.ObserveSemaphore("s", sx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Unregister()
	var a metric.Registration
	if a, err = ctxsyncotel.ObserveSemaphore("s", sa, opt); err != nil {
		t.Fatal(err)
	}
	p.refuse = true
	p.during = func() {
		if err := a.Unregister(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ctxsyncotel.ObserveSemaphore("s", sb, opt); err == nil {
		t.Fatal("ObserveSemaphore with a refusing Meter succeeded")
	}
	c := collect(t, r)
	if n := c.points("ctxsync.semaphore.available"); n != 1 {
		t.Fatalf("ctxsync.semaphore.available has %d points, want 1 (X's, the one in force)", n)
	}
	if got := c.point(t, "ctxsync.semaphore.available", ctxsyncotel.SemaphoreNameKey.String("s")); got != 3 {
		t.Errorf("ctxsync.semaphore.available = %d, want 3 (X's)", got)
	}
}

// gapProvider gives Meters whose registrations, once unregistered from the
// SDK, call after: a collection at that moment.
type gapProvider struct {
	metric.MeterProvider
	after func()
}

func (p *gapProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &gapMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

type gapMeter struct {
	metric.Meter
	p *gapProvider
}

func (m *gapMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err != nil {
		return nil, err
	}
	return &gapRegistration{Registration: reg, p: m.p}, nil
}

type gapRegistration struct {
	metric.Registration
	p *gapProvider
}

func (r *gapRegistration) Unregister() error {
	err := r.Registration.Unregister()
	if f := r.p.after; f != nil {
		r.p.after = nil
		f()
	}
	return err
}

// TestReviewFx13b_UnregisterLeavesNoGap pins a defect: of two registrations
// under one series, the one made last reports; its Unregister took its
// callback out of the SDK first, and only then handed the series back to
// the one made before. A collection between the two found the series
// reported by neither: the semaphore vanished from that export (a
// Prometheus scrape through the OpenTelemetry exporter drops the series, a
// push exporter sends a gap), at every reload that ends a registration.
//
// Handing the series back before the SDK's unregister would trade the gap
// for a double: a collection that ran the later registration's callback
// before the hand-back and the earlier one's after it would add the two up.
// The right behaviour: one callback reports the series, reading the source
// of the newest registration in force, and the hand-back is one change of
// what it reads, between two collections.
func TestReviewFx13b_UnregisterLeavesNoGap(t *testing.T) {
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	p := &gapProvider{MeterProvider: sdk}
	opt := ctxsyncotel.WithMeterProvider(p)
	x, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(3), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Unregister()
	b, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, r).point(t, "ctxsync.semaphore.available", ctxsyncotel.SemaphoreNameKey.String("s")); got != 7 {
		t.Fatalf("ctxsync.semaphore.available = %d, want 7 (the registration made last)", got)
	}
	var n int
	var got int64
	p.after = func() {
		c := collect(t, r)
		if n = c.points("ctxsync.semaphore.available"); n == 1 {
			got = c.point(t, "ctxsync.semaphore.available", ctxsyncotel.SemaphoreNameKey.String("s"))
		}
	}
	if err := b.Unregister(); err != nil {
		t.Fatal(err)
	}
	if n != 1 || got != 3 {
		t.Errorf("collected during the Unregister: %d points of ctxsync.semaphore.available (value %d), want 1 of 3 (the registration still in force)", n, got)
	}
}

// TestReviewFx13b_FailedObserveWatchAfterTheOneBeforeEnded is the test above
// for an Observe function with a counter: the registration still in force
// reports the Watch's version again, and the counter does not fall.
func TestReviewFx13b_FailedObserveWatchAfterTheOneBeforeEnded(t *testing.T) {
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	p := &refusingProvider{MeterProvider: sdk}
	opt := ctxsyncotel.WithMeterProvider(p)
	wx, wa, wb := ctxsync.NewWatch(0), ctxsync.NewWatch(0), ctxsync.NewWatch(0)
	wx.Store(1) // version 2
	for range 4 {
		wa.Store(1) // version 5
	}
	x, err := ctxsyncotel.ObserveWatch("w", wx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Unregister()
	key := ctxsyncotel.WatchNameKey.String("w")
	before := collect(t, r).point(t, "ctxsync.watch.version", key)
	a, err := ctxsyncotel.ObserveWatch("w", wa, opt)
	if err != nil {
		t.Fatal(err)
	}
	mid := collect(t, r).point(t, "ctxsync.watch.version", key)
	p.refuse = true
	p.during = func() {
		if err := a.Unregister(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ctxsyncotel.ObserveWatch("w", wb, opt); err == nil {
		t.Fatal("ObserveWatch with a refusing Meter succeeded")
	}
	wx.Store(2) // version 3: one more for X
	c := collect(t, r)
	if n := c.points("ctxsync.watch.version"); n != 1 {
		t.Fatalf("ctxsync.watch.version has %d points, want 1 (X's, the one in force); before %d, %d", n, before, mid)
	}
	if got := c.point(t, "ctxsync.watch.version", key); got != mid+1 {
		t.Errorf("ctxsync.watch.version = %d, want %d (what it was, and X's new version)", got, mid+1)
	}
}
