package ctxsyncotel_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

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
