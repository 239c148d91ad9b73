package ctxsyncotel_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// selfObservingProvider is a provider that, each time it is asked for the
// package's Meter, observes a semaphore of its own through another
// provider, in place of the one it observed before: code of the user's
// that calls into the package from inside Meter.
type selfObservingProvider struct {
	metric.MeterProvider
	other metric.MeterProvider

	mu    sync.Mutex
	reg   metric.Registration
	calls int
	err   error
}

func (p *selfObservingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	if name == ctxsyncotel.ScopeName {
		reg, err := ctxsyncotel.ObserveSemaphore("provider", ctxsync.NewSemaphore(1), ctxsyncotel.WithMeterProvider(p.other))
		p.mu.Lock()
		old := p.reg
		p.reg, p.err = reg, err
		p.calls++
		p.mu.Unlock()
		if old != nil {
			_ = old.Unregister()
		}
	}
	return p.MeterProvider.Meter(name, opts...)
}

// within runs f, and fails t if it has not returned within a generous
// time: a deadlock, not a slow machine.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: deadlocked (not returned in 30 s)", what)
	}
}

// TestRV16cMeterObservesNoDeadlock: a provider set as the global one whose
// Meter observes through another provider, once a series was observed
// through the global provider. The package asks the global provider for
// its Meter to learn whom it delegates to; the global provider holds its
// lock while it asks the provider set, whose Meter then observes, and the
// package asked the global provider again from inside that Observe: the
// goroutine waited for a lock it held, for good. The right behaviour: an
// Observe from inside a Meter the package asked for returns, and the
// series are one all the same.
func TestRV16cMeterObservesNoDeadlock(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	other := sdkmetric.NewMeterProvider()
	defer other.Shutdown(context.Background())
	p := &selfObservingProvider{MeterProvider: sdk, other: other}
	g, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(3))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Unregister()
	otel.SetMeterProvider(p)
	globalSet = true
	var s metric.Registration
	within(t, "ObserveSemaphore through the provider set", func() {
		s, err = ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(7), ctxsyncotel.WithMeterProvider(p))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unregister()
	p.mu.Lock()
	if p.err != nil {
		t.Errorf("the Observe from inside Meter: %v", p.err)
	}
	p.mu.Unlock()
	within(t, "a collection", func() {
		if got := collect(t, r).point(t, "ctxsync.semaphore.available"); got != 7 {
			t.Errorf("ctxsync.semaphore.available = %d, want 7, the newest registration's alone", got)
		}
	})
	p.mu.Lock()
	if p.reg != nil {
		_ = p.reg.Unregister()
	}
	p.mu.Unlock()
}

// TestRV16cMergeDeltaNeverNegative: Watches observed through the global
// provider and through the provider set as the global one later, under
// one name, read by a reader of delta temporality: from the merge on, no
// delta is negative, and the deltas add up to the versions of the Watches,
// each counted once.
func TestRV16cMergeDeltaNeverNegative(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	r := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality {
		return metricdata.DeltaTemporality
	}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	at := func(v int) *ctxsync.Watch[int] {
		w := ctxsync.NewWatch(0)
		for i := range v - 1 {
			w.Store(i)
		}
		return w
	}
	var total int64
	deltas := func(step string) {
		t.Helper()
		var rm metricdata.ResourceMetrics
		if err := r.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "ctxsync.watch.version" {
					continue
				}
				sum := m.Data.(metricdata.Sum[int64])
				if sum.Temporality != metricdata.DeltaTemporality {
					t.Fatalf("temporality %v, want delta", sum.Temporality)
				}
				for _, p := range sum.DataPoints {
					if p.Value < 0 {
						t.Errorf("%s: delta %d", step, p.Value)
					}
					total += p.Value
				}
			}
		}
	}
	w1, w2 := at(10), at(4)
	g1, err := ctxsyncotel.ObserveWatch("w", w1)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := ctxsyncotel.ObserveWatch("w", w2, ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	deltas("before otel.SetMeterProvider")
	if total != 4 {
		t.Fatalf("%d counted before otel.SetMeterProvider, want 4, the delegate's own", total)
	}
	otel.SetMeterProvider(mp)
	globalSet = true
	deltas("the first collection after otel.SetMeterProvider")
	// The global provider's series reported nowhere, and counted nothing
	// read: the counter carries on from the delegate's 4, the Watch
	// observed through the global provider not counted until it is the
	// newest registration in force.
	if total != 4 {
		t.Errorf("%d counted at the merge, want 4, the delegate's series' count", total)
	}
	w2.Store(1) // counted: w2 is the newest
	w1.Store(1) // not counted until w2's registration ends
	deltas("after two Stores")
	if err := p2.Unregister(); err != nil {
		t.Fatal(err)
	}
	deltas("the newest ended")
	w1.Store(2)
	deltas("a Store to the one left")
	if err := g1.Unregister(); err != nil {
		t.Fatal(err)
	}
	g3, err := ctxsyncotel.ObserveWatch("w", at(3))
	if err != nil {
		t.Fatal(err)
	}
	defer g3.Unregister()
	deltas("a Watch made anew")
	// w2's 4 and its Store; w1's 10 and its two Stores, counted once w2's
	// registration ended; the new Watch's 3.
	if want := int64(4 + 1 + 10 + 2 + 3); total != want {
		t.Errorf("%d counted in all, want %d", total, want)
	}
}

// wrappedProvider is a provider of the user's around the SDK's that gives
// the SDK's own Meters: the two are two providers to the package, and one
// to the SDK.
type wrappedProvider struct{ *sdkmetric.MeterProvider }

// TestRV16cWrappedProviderOneSeries: a semaphore observed through the
// SDK's provider and another, under the same name, through a wrapper of it
// that gives the same Meter. The package keys series by the provider, so
// they are two series with a callback each, and the SDK adds the two up
// (3 + 7 = 10 permits free), as it did for the global provider and its
// delegate before they were merged.
func TestRV16cWrappedProviderOneSeries(t *testing.T) {
	t.Skip("the package keys a series by its MeterProvider, not by the Meter it reports through: " +
		"two providers that give one Meter (a wrapper that embeds the SDK's) are two series to the package " +
		"and one to the SDK, whose callbacks both report, and the SDK adds them up; " +
		"merging them needs series keyed by the Meter, or a merge like the global provider's for any two providers found to share a Meter")
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	a, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(3), ctxsyncotel.WithMeterProvider(sdk))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Unregister()
	b, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(7), ctxsyncotel.WithMeterProvider(&wrappedProvider{sdk}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Unregister()
	if got := collect(t, r).point(t, "ctxsync.semaphore.available"); got != 7 {
		t.Errorf("ctxsync.semaphore.available = %d, want 7, the newest registration's alone", got)
	}
}

// TestRV16cGlobalSetTwiceBeforeLearned: a semaphore observed through the
// global provider, which then delegates to the first provider set; a
// second provider is set before any Observe or collection lets the package
// find the first. The package asks only the provider that is the global
// one now, the second, finds it is not the delegate, and never learns the
// first: a semaphore observed under the same name through the first is a
// series of its own, and the first's collections add the two up.
func TestRV16cGlobalSetTwiceBeforeLearned(t *testing.T) {
	t.Skip("the package finds the provider the global one delegates to only while that provider is the global one: " +
		"set a second time before an Observe or a collection, the first is never found, and its series stay apart from " +
		"the global provider's; finding it needs the provider of each series asked, at its callback, as the global one now is")
	if !inOwnProcess(t) {
		return
	}
	r := sdkmetric.NewManualReader()
	first := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer first.Shutdown(context.Background())
	second := sdkmetric.NewMeterProvider()
	defer second.Shutdown(context.Background())
	g, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(3))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Unregister()
	otel.SetMeterProvider(first)
	otel.SetMeterProvider(second)
	globalSet = true
	s, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(7), ctxsyncotel.WithMeterProvider(first))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unregister()
	if got := collect(t, r).point(t, "ctxsync.semaphore.available"); got != 7 {
		t.Errorf("ctxsync.semaphore.available = %d, want 7, the newest registration's alone", got)
	}
}

// TestRV16cGlobalSetSameAgainThenShutdown: the provider set as the global
// one set again, the same, before the package found it: it is found all
// the same, and a semaphore observed through the global provider before and
// one through the provider after are one series. The provider then shut
// down with both registrations in force: their Unregisters return, with no
// error, and no callback is left with the Meter.
func TestRV16cGlobalSetSameAgainThenShutdown(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	var callbacks int64
	mp := &countingProvider{MeterProvider: sdk, n: &callbacks}
	g, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(3))
	if err != nil {
		t.Fatal(err)
	}
	otel.SetMeterProvider(mp)
	otel.SetMeterProvider(mp)
	globalSet = true
	s, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(7), ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, r).point(t, "ctxsync.semaphore.available"); got != 7 {
		t.Errorf("ctxsync.semaphore.available = %d, want 7, the newest registration's alone", got)
	}
	if err := sdk.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	within(t, "Unregister after Shutdown", func() {
		if err := errorsOf(s, g); err != nil {
			t.Errorf("Unregister after Shutdown: %v", err)
		}
	})
	if callbacks != 0 {
		t.Errorf("%d callbacks left registered with the Meter, want none", callbacks)
	}
}
