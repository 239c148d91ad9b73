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

// stepProvider gives Meters whose registrations' Unregister does, in turn,
// what unregister says for each call (nil: the SDK's Unregister): "refuse"
// returns an error before the SDK's, "panic" panics and "goexit" calls
// runtime.Goexit before it. It counts the callbacks registered with the SDK
// and not yet unregistered from it.
type stepProvider struct {
	metric.MeterProvider
	mu         sync.Mutex
	live       int
	unregister []string
}

var errUnregisterRefused = errors.New("unregister refused")

func (p *stepProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &stepMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

func (p *stepProvider) callbacks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live
}

func (p *stepProvider) next() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.unregister) == 0 {
		return ""
	}
	s := p.unregister[0]
	p.unregister = p.unregister[1:]
	return s
}

type stepMeter struct {
	metric.Meter
	p *stepProvider
}

func (m *stepMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err != nil {
		return nil, err
	}
	m.p.mu.Lock()
	m.p.live++
	m.p.mu.Unlock()
	return &stepRegistration{Registration: reg, p: m.p}, nil
}

type stepRegistration struct {
	metric.Registration
	p    *stepProvider
	done bool
}

func (r *stepRegistration) Unregister() error {
	switch r.p.next() {
	case "refuse":
		return errUnregisterRefused
	case "panic":
		panic(meterPanic)
	case "goexit":
		runtime.Goexit()
	}
	if err := r.Registration.Unregister(); err != nil {
		return err
	}
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if !r.done {
		r.done = true
		r.p.live--
	}
	return nil
}

func newStepProvider(t *testing.T) (*sdkmetric.ManualReader, *stepProvider, ctxsyncotel.Option) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	p := &stepProvider{MeterProvider: sdk}
	return r, p, ctxsyncotel.WithMeterProvider(p)
}

// unregisterIn calls reg.Unregister in a goroutine of its own, and returns
// the value it panicked with, whether it called runtime.Goexit, and its
// error.
func unregisterIn(reg metric.Registration) (panicked any, exited bool, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		exited = true
		defer func() { panicked = recover() }()
		err = reg.Unregister()
		exited = false
	}()
	<-done
	if panicked != nil {
		exited = false
	}
	return panicked, exited, err
}

// TestRV15bUnregisterRefusedIsRetried: the Meter refuses, panics or calls
// runtime.Goexit in the Unregister of a callback at the last registration's
// Unregister (its own callback, or the one that reported the series for
// it): that Unregister fails, the series is reported by none, or once by a
// new registration under it, and the next Unregister unregisters what is
// left, so that no callback stays registered with the Meter. A second
// Unregister did nothing, and the callback stayed registered for good.
func TestRV15bUnregisterRefusedIsRetried(t *testing.T) {
	for _, how := range []string{"refuse", "panic", "goexit"} {
		for _, mode := range []string{"alone", "own", "carrier"} {
			what := how + "/" + mode
			r, p, opt := newStepProvider(t)
			b, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt)
			if err != nil {
				t.Fatal(err)
			}
			switch mode {
			case "alone":
				// b's Unregister unregisters its callback, the carrier.
				p.unregister = []string{how}
			default:
				// x's callback reports the series for b once x ended;
				// b's Unregister unregisters its own, then x's.
				x := b
				if b, err = ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt); err != nil {
					t.Fatal(err)
				}
				if err := x.Unregister(); err != nil {
					t.Fatal(err)
				}
				wantSemaphore(t, r, what+": x ended", 7)
				if mode == "own" {
					p.unregister = []string{how}
				} else {
					p.unregister = []string{"", how}
				}
			}
			v, exited, err := unregisterIn(b)
			switch how {
			case "refuse":
				if !errors.Is(err, errUnregisterRefused) {
					t.Errorf("%s: Unregister = %v, want the Meter's error", what, err)
				}
			case "panic":
				if v != meterPanic {
					t.Errorf("%s: Unregister panicked with %v, want the Meter's panic", what, v)
				}
			case "goexit":
				if !exited {
					t.Errorf("%s: Unregister did not call runtime.Goexit", what)
				}
			}
			wantSemaphore(t, r, what+": all ended", 0)
			n, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(9), opt)
			if err != nil {
				t.Fatal(err)
			}
			wantSemaphore(t, r, what+": a new one, the old callback left registered", 9)
			if err := b.Unregister(); err != nil {
				t.Errorf("%s: second Unregister: %v", what, err)
			}
			wantSemaphore(t, r, what+": a new one, the old callback unregistered", 9)
			if err := n.Unregister(); err != nil {
				t.Fatal(err)
			}
			if c := p.callbacks(); c != 0 {
				t.Errorf("%s: %d callbacks left registered with the Meter after a second Unregister", what, c)
			}
			if err := b.Unregister(); err != nil {
				t.Errorf("%s: third Unregister: %v", what, err)
			}
			wantSemaphore(t, r, what+": all ended, retried", 0)
		}
	}
}

// TestRV15bObserveWatchUnregisterRefusedIsRetried: as above, for a series
// with a counter: the Watch's registration refused at its Unregister is
// retried by the next, and the counter carries on under a new one.
func TestRV15bObserveWatchUnregisterRefusedIsRetried(t *testing.T) {
	r, p, opt := newStepProvider(t)
	w := ctxsync.NewWatch(0)
	w.Store(1) // version 2
	reg, err := ctxsyncotel.ObserveWatch("w", w, opt)
	if err != nil {
		t.Fatal(err)
	}
	version := func() (int64, bool) {
		return exactPoint(collect(t, r), "ctxsync.watch.version", attribute.NewSet(ctxsyncotel.WatchNameKey.String("w")))
	}
	if v, ok := version(); !ok || v != 2 {
		t.Fatalf("version = %d (reported %v), want 2", v, ok)
	}
	p.unregister = []string{"refuse"}
	if err := reg.Unregister(); !errors.Is(err, errUnregisterRefused) {
		t.Fatalf("Unregister = %v, want the Meter's error", err)
	}
	if v, ok := version(); ok {
		t.Errorf("version reported (%d) with no registration in force", v)
	}
	again, err := ctxsyncotel.ObserveWatch("w", w, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Unregister()
	if v, ok := version(); !ok || v != 2 {
		t.Errorf("version = %d (reported %v), want 2: the same Watch carries on, counted once", v, ok)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatalf("second Unregister: %v", err)
	}
	if c := p.callbacks(); c != 1 {
		t.Errorf("%d callbacks registered with the Meter, want 1 (the new registration's)", c)
	}
}
