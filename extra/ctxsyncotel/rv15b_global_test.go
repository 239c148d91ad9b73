package ctxsyncotel_test

import (
	"context"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// inOwnProcess runs the test t in a process of its own, the global
// MeterProvider delegating only once a process: it returns false in the
// parent, once the child has passed, and true in the child, which runs the
// test's body.
func inOwnProcess(t *testing.T) bool {
	t.Helper()
	const env = "CTXSYNC_GLOBAL_TEST"
	if os.Getenv(env) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+t.Name())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return false
}

// TestRV15bGlobalProviderSeriesSplit: a semaphore observed through a
// provider given by WithMeterProvider before that provider is set as the
// global one, and another observed under the same name without
// WithMeterProvider after it was set, report to one series of the SDK. They
// were two series to the Observe functions (the first keyed by the
// provider, the second by the global delegating one): each had a callback
// that reported it, and the SDK added the two up (3 + 7 = 10 permits free).
// The right behaviour: one series, the newest registration's alone.
func TestRV15bGlobalProviderSeriesSplit(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	a, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(3), ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Unregister()
	otel.SetMeterProvider(mp)
	globalSet = true
	b, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(7))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Unregister()
	if got := collect(t, r).point(t, "ctxsync.semaphore.available"); got != 7 {
		t.Errorf("ctxsync.semaphore.available = %d, want 7, the newest registration's alone", got)
	}
}

// TestOTel16GlobalProviderSeriesReverse: the other order, a semaphore
// observed through the global provider before a provider is set as the
// global one, and another through that provider, given by
// WithMeterProvider, after: one series, the newest registration's alone.
func TestOTel16GlobalProviderSeriesReverse(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	a, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(3))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Unregister()
	otel.SetMeterProvider(mp)
	globalSet = true
	b, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(7), ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, r).point(t, "ctxsync.semaphore.available"); got != 7 {
		t.Errorf("ctxsync.semaphore.available = %d, want 7, the newest registration's alone", got)
	}
	if err := b.Unregister(); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, r).point(t, "ctxsync.semaphore.available"); got != 3 {
		t.Errorf("ctxsync.semaphore.available = %d once the newest ended, want 3, the one left", got)
	}
}

// TestOTel16GlobalProviderOtherProviderApart: a semaphore observed through
// a provider that is never the global one stays a series of its own beside
// one of the same name observed through the global provider, before and
// after another provider is set as the global one: each provider reports
// its own.
func TestOTel16GlobalProviderOtherProviderApart(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	or := sdkmetric.NewManualReader()
	other := sdkmetric.NewMeterProvider(sdkmetric.WithReader(or))
	defer other.Shutdown(context.Background())
	a, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(3), ctxsyncotel.WithMeterProvider(other))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Unregister()
	b, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(5))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Unregister()
	otel.SetMeterProvider(mp)
	globalSet = true
	c, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(7))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Unregister()
	if got := collect(t, r).point(t, "ctxsync.semaphore.available"); got != 7 {
		t.Errorf("ctxsync.semaphore.available = %d through the global provider, want 7", got)
	}
	if got := collect(t, or).point(t, "ctxsync.semaphore.available"); got != 3 {
		t.Errorf("ctxsync.semaphore.available = %d through the other provider, want 3", got)
	}
}

// countingProvider counts the callbacks registered with its Meters and not
// yet unregistered. Its Meter of a scope is one value, as the SDK's is, so
// that the global provider, delegating to it, gives the same.
type countingProvider struct {
	metric.MeterProvider
	meter *countingMeter
	n     *int64
}

func (p *countingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	if name != ctxsyncotel.ScopeName {
		return p.MeterProvider.Meter(name, opts...)
	}
	if p.meter == nil {
		p.meter = &countingMeter{p.MeterProvider.Meter(name, opts...), p.n}
	}
	return p.meter
}

type countingMeter struct {
	metric.Meter
	n *int64
}

func (m *countingMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err == nil {
		*m.n++
		reg = &countedRegistration{reg, m.n, false}
	}
	return reg, err
}

type countedRegistration struct {
	metric.Registration
	n    *int64
	done bool
}

func (r *countedRegistration) Unregister() error {
	err := r.Registration.Unregister()
	if err == nil && !r.done {
		r.done = true
		*r.n--
	}
	return err
}

// TestOTel16GlobalProviderSeriesMerged: a semaphore and a Watch observed
// through the global provider, and another of each, under the same names,
// through a provider given by WithMeterProvider, both before that provider
// is set as the global one, are two series each until then, and both report
// to it once it is set: the SDK added them up (3 + 5 = 8 permits free). The
// right behaviour: from the first collection after otel.SetMeterProvider
// on, they are one, the newest registration's alone; the Watch's counter
// never falls (it carries the two counts on); a registration made later
// takes the series over, and hands it back when it ends; and the callbacks
// of all of them are unregistered with the last registration.
func TestOTel16GlobalProviderSeriesMerged(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	var callbacks int64
	mp := &countingProvider{MeterProvider: sdk, n: &callbacks}
	version := func(w *ctxsync.Watch[int], n int) *ctxsync.Watch[int] {
		for i := range n - 1 {
			w.Store(i)
		}
		return w
	}
	s1, s2 := ctxsync.NewSemaphore(3), ctxsync.NewSemaphore(5)
	w1, w2 := version(ctxsync.NewWatch(0), 10), version(ctxsync.NewWatch(0), 4)
	var regs []metric.Registration
	observe := func(s *ctxsync.Semaphore, w *ctxsync.Watch[int], opts ...ctxsyncotel.Option) {
		t.Helper()
		rs, err := ctxsyncotel.ObserveSemaphore("g", s, opts...)
		if err != nil {
			t.Fatal(err)
		}
		rw, err := ctxsyncotel.ObserveWatch("g", w, opts...)
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, rs, rw)
	}
	observe(s1, w1)
	observe(s2, w2, ctxsyncotel.WithMeterProvider(mp))
	otel.SetMeterProvider(mp)
	globalSet = true
	c := collect(t, r)
	if got := c.point(t, "ctxsync.semaphore.available"); got != 5 {
		t.Errorf("ctxsync.semaphore.available = %d at the first collection after otel.SetMeterProvider, want 5, the newest registration's alone", got)
	}
	shown := c.point(t, "ctxsync.watch.version")
	if shown < 4 {
		t.Errorf("ctxsync.watch.version = %d at the first collection after otel.SetMeterProvider, want at least 4, the version of the newest Watch", shown)
	}

	observe(ctxsync.NewSemaphore(7), ctxsync.NewWatch(0))
	c = collect(t, r)
	if got := c.point(t, "ctxsync.semaphore.available"); got != 7 {
		t.Errorf("ctxsync.semaphore.available = %d, want 7, the newest registration's alone", got)
	}
	if got := c.point(t, "ctxsync.watch.version"); got < shown {
		t.Errorf("ctxsync.watch.version = %d, fell from %d", got, shown)
	} else {
		shown = got
	}
	// The newest ends: the newest left (s2, observed after s1) reports.
	for i, want := range []int64{5, 3} {
		regs = regs[:len(regs)-2]
		if err := errorsOf(regs[len(regs) : len(regs)+2]...); err != nil {
			t.Fatal(err)
		}
		c = collect(t, r)
		if got := c.point(t, "ctxsync.semaphore.available"); got != want {
			t.Errorf("%d ended: ctxsync.semaphore.available = %d, want %d", i+1, got, want)
		}
		if got := c.point(t, "ctxsync.watch.version"); got < shown {
			t.Errorf("%d ended: ctxsync.watch.version = %d, fell from %d", i+1, got, shown)
		} else {
			shown = got
		}
	}
	if err := errorsOf(regs...); err != nil {
		t.Fatal(err)
	}
	c = collect(t, r)
	if n := c.points("ctxsync.semaphore.available") + c.points("ctxsync.watch.version"); n != 0 {
		t.Errorf("%d points once every registration ended, want none", n)
	}
	if callbacks != 0 {
		t.Errorf("%d callbacks left registered with the Meter once every registration ended, want none", callbacks)
	}
}

// errorsOf unregisters regs and returns the first error.
func errorsOf(regs ...metric.Registration) error {
	var first error
	for _, r := range regs {
		if err := r.Unregister(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// panickyProvider gives Meters until panics is set, and then panics.
type panickyProvider struct {
	metric.MeterProvider
	panics atomic.Bool
}

func (p *panickyProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	if p.panics.Load() {
		panic("the provider panicked")
	}
	return p.MeterProvider.Meter(name, opts...)
}

// TestOTel16GlobalProviderMeterPanics: once a series was observed through
// the global provider, the callbacks look at the provider set as the global
// one, for the provider it delegates to; one whose Meter panics is taken for
// none, and the collections of another provider, and Observe calls through
// it, go on as if it were not there.
func TestOTel16GlobalProviderMeterPanics(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	g, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(1))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Unregister()
	set := &panickyProvider{MeterProvider: sdkmetric.NewMeterProvider()}
	otel.SetMeterProvider(set)
	globalSet = true
	set.panics.Store(true)
	r := sdkmetric.NewManualReader()
	other := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer other.Shutdown(context.Background())
	s, err := ctxsyncotel.ObserveSemaphore("g", ctxsync.NewSemaphore(7), ctxsyncotel.WithMeterProvider(other))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unregister()
	if got := collect(t, r).point(t, "ctxsync.semaphore.available"); got != 7 {
		t.Errorf("ctxsync.semaphore.available = %d, want 7", got)
	}
}
