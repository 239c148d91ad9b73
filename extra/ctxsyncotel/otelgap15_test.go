package ctxsyncotel_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// hookProvider gives Meters that count the callbacks registered with them and
// not yet unregistered, and run, once each, a hook in RegisterCallback
// before the SDK's (whose error refuses the callback; it may also panic or
// call runtime.Goexit) and one in Unregister, before or after the SDK's.
type hookProvider struct {
	metric.MeterProvider
	mu               sync.Mutex
	live             int
	register         func() error
	beforeUnregister func()
	afterUnregister  func()
}

func (p *hookProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &hookMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

func (p *hookProvider) callbacks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live
}

// take returns *f and clears it, under p.mu.
func (p *hookProvider) take(f *func()) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := *f
	*f = nil
	return g
}

type hookMeter struct {
	metric.Meter
	p *hookProvider
}

func (m *hookMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	m.p.mu.Lock()
	hook := m.p.register
	m.p.register = nil
	m.p.mu.Unlock()
	if hook != nil {
		if err := hook(); err != nil {
			return nil, err
		}
	}
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err != nil {
		return nil, err
	}
	m.p.mu.Lock()
	m.p.live++
	m.p.mu.Unlock()
	return &hookRegistration{Registration: reg, p: m.p}, nil
}

type hookRegistration struct {
	metric.Registration
	p    *hookProvider
	once sync.Once
}

func (r *hookRegistration) Unregister() error {
	if f := r.p.take(&r.p.beforeUnregister); f != nil {
		f()
	}
	err := r.Registration.Unregister()
	r.once.Do(func() {
		r.p.mu.Lock()
		r.p.live--
		r.p.mu.Unlock()
	})
	if f := r.p.take(&r.p.afterUnregister); f != nil {
		f()
	}
	return err
}

func newHookProvider(t *testing.T) (*sdkmetric.ManualReader, *hookProvider, ctxsyncotel.Option) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	p := &hookProvider{MeterProvider: sdk}
	return r, p, ctxsyncotel.WithMeterProvider(p)
}

// semaphorePoint returns the ctxsync.semaphore.available of the series s,
// and whether it was reported.
func semaphorePoint(t *testing.T, r *sdkmetric.ManualReader, s string) (int64, bool) {
	t.Helper()
	return exactPoint(collect(t, r), "ctxsync.semaphore.available", attribute.NewSet(ctxsyncotel.SemaphoreNameKey.String(s)))
}

func wantSemaphore(t *testing.T, r *sdkmetric.ManualReader, what string, want int64) {
	t.Helper()
	got, ok := semaphorePoint(t, r, "s")
	switch {
	case want == 0 && ok:
		t.Errorf("%s: series reported (%d), want none", what, got)
	case want != 0 && !ok:
		t.Errorf("%s: series not reported, want %d", what, want)
	case want != 0 && got != want:
		t.Errorf("%s: available = %d, want %d", what, got, want)
	}
}

// TestOtelGap15CarrierKeptForTheOthers: the callback of the first
// registration reports the series for a later one once the first ended;
// it is unregistered with the last, and no callback is left behind.
func TestOtelGap15CarrierKeptForTheOthers(t *testing.T) {
	r, p, opt := newHookProvider(t)
	x, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(3), opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt)
	if err != nil {
		t.Fatal(err)
	}
	wantSemaphore(t, r, "both in force", 7)
	if err := x.Unregister(); err != nil {
		t.Fatal(err)
	}
	wantSemaphore(t, r, "the first ended", 7)
	if err := x.Unregister(); err != nil {
		t.Fatalf("second Unregister: %v", err)
	}
	wantSemaphore(t, r, "the first ended twice", 7)
	if err := b.Unregister(); err != nil {
		t.Fatal(err)
	}
	wantSemaphore(t, r, "both ended", 0)
	if n := p.callbacks(); n != 0 {
		t.Errorf("%d callbacks left registered with the Meter after every Unregister", n)
	}
}

// TestOtelGap15LastEndsWhileObserveUnderWay: the last registration ends
// while an Observe under the series is registering its callback: the
// series is reported by the new one once its Observe returns, once, and no
// callback is left registered after its end.
func TestOtelGap15LastEndsWhileObserveUnderWay(t *testing.T) {
	r, p, opt := newHookProvider(t)
	x, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(3), opt)
	if err != nil {
		t.Fatal(err)
	}
	p.register = func() error {
		if err := x.Unregister(); err != nil {
			t.Error(err)
		}
		wantSemaphore(t, r, "between the end of the last and the new Observe's return", 0)
		return nil
	}
	n, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt)
	if err != nil {
		t.Fatal(err)
	}
	wantSemaphore(t, r, "the new one in force", 7)
	if err := n.Unregister(); err != nil {
		t.Fatal(err)
	}
	wantSemaphore(t, r, "all ended", 0)
	if c := p.callbacks(); c != 0 {
		t.Errorf("%d callbacks left registered with the Meter after every Unregister", c)
	}
}

// TestOtelGap15ObserveWhileTheCarrierIsUnregistered: an Observe under the
// series while the last registration's Unregister is taking the callback
// that reported it out of the SDK, before and after the SDK's unregister:
// the new registration reports, once, from its Observe's return on.
func TestOtelGap15ObserveWhileTheCarrierIsUnregistered(t *testing.T) {
	for _, after := range []bool{false, true} {
		r, p, opt := newHookProvider(t)
		x, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(3), opt)
		if err != nil {
			t.Fatal(err)
		}
		var n metric.Registration
		hook := func() {
			var err error
			if n, err = ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt); err != nil {
				t.Error(err)
				return
			}
			wantSemaphore(t, r, "the new one in force, the old callback being unregistered", 7)
		}
		if after {
			p.afterUnregister = hook
		} else {
			p.beforeUnregister = hook
		}
		if err := x.Unregister(); err != nil {
			t.Fatal(err)
		}
		if n == nil {
			t.Fatal("the hook made no registration")
		}
		wantSemaphore(t, r, "the new one in force", 7)
		if err := n.Unregister(); err != nil {
			t.Fatal(err)
		}
		wantSemaphore(t, r, "all ended", 0)
		if c := p.callbacks(); c != 0 {
			t.Errorf("after=%v: %d callbacks left registered with the Meter after every Unregister", after, c)
		}
	}
}

// TestOtelGap15FailedObserveAfterTheLastEnded: an Observe fails (its
// callback refused, panicking, or calling runtime.Goexit) after the last
// registration under the series ended during it: the callback that
// reported the series, kept for it, is unregistered then, and a later
// Observe reports, once.
func TestOtelGap15FailedObserveAfterTheLastEnded(t *testing.T) {
	errRefusedHere := errors.New("refused")
	for _, how := range []string{"refuse", "panic", "goexit"} {
		r, p, opt := newHookProvider(t)
		x, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(3), opt)
		if err != nil {
			t.Fatal(err)
		}
		p.register = func() error {
			if err := x.Unregister(); err != nil {
				t.Error(err)
			}
			switch how {
			case "panic":
				panic(meterPanic)
			case "goexit":
				runtime.Goexit()
			}
			return errRefusedHere
		}
		done := make(chan any)
		go func() {
			var v any = "goexit" // unless it returns or panics
			defer func() {
				if p := recover(); p != nil {
					v = p
				}
				done <- v
			}()
			if _, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(5), opt); !errors.Is(err, errRefusedHere) {
				t.Errorf("%s: ObserveSemaphore = %v, want the Meter's error", how, err)
			}
			v = "returned"
		}()
		v := <-done
		if want := map[string]any{"refuse": "returned", "panic": meterPanic, "goexit": "goexit"}[how]; v != want {
			t.Errorf("%s: ObserveSemaphore ended with %v, want %v", how, v, want)
		}
		wantSemaphore(t, r, how+": none in force", 0)
		if c := p.callbacks(); c != 0 {
			t.Errorf("%s: %d callbacks left registered with the Meter, with none in force", how, c)
		}
		n, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt)
		if err != nil {
			t.Fatal(err)
		}
		wantSemaphore(t, r, how+": a new one in force", 7)
		_ = n.Unregister()
		if c := p.callbacks(); c != 0 {
			t.Errorf("%s: %d callbacks left registered with the Meter after every Unregister", how, c)
		}
	}
}

// TestOtelGap15CarrierUnregisterPanics: the Meter's Unregister of the
// callback that reported the series panics, at the last registration's
// end: the panic reaches the caller, and the series is whole: a later
// Observe reports it, once, the old callback (still registered with the
// SDK, the Meter having panicked before it) reporting nothing.
func TestOtelGap15CarrierUnregisterPanics(t *testing.T) {
	r, p, opt := newHookProvider(t)
	x, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(3), opt)
	if err != nil {
		t.Fatal(err)
	}
	p.beforeUnregister = func() { panic(meterPanic) }
	mustPanic(t, "Unregister", func() { _ = x.Unregister() })
	n, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Unregister()
	wantSemaphore(t, r, "a new one after the panic", 7)
}

// TestOtelGap15LockHeldThroughAnRWLocksCallback: an RWLock observed first, a
// Lock then under the same name: the Lock's ctxsync.lock.held is reported,
// by the callback of the RWLock's registration, and gone with the Lock's.
func TestOtelGap15LockHeldThroughAnRWLocksCallback(t *testing.T) {
	r, opt := newProvider(t)
	rw, l := ctxsync.NewRWLock(), ctxsync.NewLock()
	a, err := ctxsyncotel.ObserveLock("l", rw, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Unregister()
	if n := collect(t, r).points("ctxsync.lock.held"); n != 0 {
		t.Errorf("ctxsync.lock.held of an RWLock alone: %d points, want none", n)
	}
	b, err := ctxsyncotel.ObserveLock("l", l, opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, r).point(t, "ctxsync.lock.held", attrString("ctxsync.lock.name", "l")); got != 1 {
		t.Errorf("ctxsync.lock.held of the Lock observed last = %d, want 1", got)
	}
	l.Unlock()
	if err := b.Unregister(); err != nil {
		t.Fatal(err)
	}
	if n := collect(t, r).points("ctxsync.lock.held"); n != 0 {
		t.Errorf("ctxsync.lock.held once the Lock's registration ended: %d points, want none", n)
	}
}

// TestOtelGap15TwoFunctionsOfOneAttributeSet: a semaphore and a lock
// observed under attribute sets that come out equal (each given the other's
// name key by WithAttributes) report each its own instruments. They were
// one series to the Observe functions, which keep the series of a
// MeterProvider and an attribute set: the lock, observed last, took it
// over, and the semaphore's instruments reported nothing, though nothing of
// the two could add up.
func TestOtelGap15TwoFunctionsOfOneAttributeSet(t *testing.T) {
	r, opt := newProvider(t)
	s, err := ctxsyncotel.ObserveSemaphore("x", ctxsync.NewSemaphore(3), opt,
		ctxsyncotel.WithAttributes(ctxsyncotel.LockNameKey.String("x")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unregister()
	l, err := ctxsyncotel.ObserveLock("x", ctxsync.NewLock(), opt,
		ctxsyncotel.WithAttributes(ctxsyncotel.SemaphoreNameKey.String("x")))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unregister()
	c := collect(t, r)
	if n := c.points("ctxsync.semaphore.available"); n != 1 {
		t.Fatalf("ctxsync.semaphore.available: %d points, want 1: the lock's registration took the semaphore's series over", n)
	}
	if got := c.point(t, "ctxsync.semaphore.available"); got != 3 {
		t.Errorf("ctxsync.semaphore.available = %d, want 3", got)
	}
	if n := c.points("ctxsync.lock.waiting"); n != 1 {
		t.Errorf("ctxsync.lock.waiting: %d points, want 1", n)
	}
}

// TestOtelGap15ObserveFromTheMetersRegisterCallback: the Meter's
// RegisterCallback of the first Observe under the series makes another
// Observe under it, which returns first: each reports in turn, once, the
// one whose Observe returned last first, and no callback is left behind.
func TestOtelGap15ObserveFromTheMetersRegisterCallback(t *testing.T) {
	r, p, opt := newHookProvider(t)
	var inner metric.Registration
	p.register = func() error {
		var err error
		if inner, err = ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(5), opt); err != nil {
			t.Error(err)
		}
		wantSemaphore(t, r, "the inner Observe returned, the outer under way", 5)
		return nil
	}
	outer, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt)
	if err != nil {
		t.Fatal(err)
	}
	if inner == nil {
		t.Fatal("the hook made no registration")
	}
	wantSemaphore(t, r, "both in force, the outer joined last", 7)
	if err := outer.Unregister(); err != nil {
		t.Fatal(err)
	}
	wantSemaphore(t, r, "the outer ended", 5)
	if err := inner.Unregister(); err != nil {
		t.Fatal(err)
	}
	wantSemaphore(t, r, "both ended", 0)
	if c := p.callbacks(); c != 0 {
		t.Errorf("%d callbacks left registered with the Meter after every Unregister", c)
	}
}
