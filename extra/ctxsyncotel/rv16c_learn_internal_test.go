package ctxsyncotel

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync"
)

// ownProcess runs the test t in a process of its own, the global
// MeterProvider delegating only once a process: it returns false in the
// parent, once the child has passed, and true in the child.
func ownProcess(t *testing.T) bool {
	t.Helper()
	const env = "CTXSYNC_GLOBAL_INTERNAL_TEST"
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

// freshMeters gives a new Meter at each call: never the same as the global
// provider's, so never taken for the delegate.
type freshMeters struct{ metric.MeterProvider }

func (p *freshMeters) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return struct{ metric.Meter }{p.MeterProvider.Meter(name, opts...)}
}

// TestRV16cLearnDelegateTriedAllocatesNothing: once a series was observed
// through the global provider, and the provider set as the global one was
// found not to be the one it delegates to (set a second time, or one whose
// Meters are new at each call), every callback of every series still looks
// at the global provider at each collection. That look allocated the weak
// pointer of the provider on the heap each time: 2,000 allocations a
// collection of 2,000 series, for good. The right behaviour: none.
func TestRV16cLearnDelegateTriedAllocatesNothing(t *testing.T) {
	if !ownProcess(t) {
		return
	}
	g, err := ObserveSemaphore("g", ctxsync.NewSemaphore(1))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Unregister()
	set := sdkmetric.NewMeterProvider()
	defer set.Shutdown(context.Background())
	otel.SetMeterProvider(&freshMeters{set})
	learnDelegate(false) // finds it not the delegate
	if learned.Load() || triedDelegate.Load() == nil {
		t.Fatalf("learned %v, tried %v: the provider set should be tried, and not the delegate", learned.Load(), triedDelegate.Load() != nil)
	}
	if n := testing.AllocsPerRun(100, func() { learnDelegate(false) }); n != 0 {
		t.Errorf("%v allocations a look at the global provider, want none", n)
	}
}

// goexitMeters calls runtime.Goexit in Meter once armed, and counts those
// calls.
type goexitMeters struct {
	metric.MeterProvider
	armed atomic.Bool
	calls atomic.Int32
}

func (p *goexitMeters) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	if p.armed.Load() {
		p.calls.Add(1)
		runtime.Goexit()
	}
	return p.MeterProvider.Meter(name, opts...)
}

// TestRV16cLearnDelegateMeterGoexitNotAskedAgain: the provider set as the
// global one, asked for a Meter as the package looks for the provider the
// global one delegates to, calls runtime.Goexit. A provider whose Meter
// panics is taken for no delegate, and not asked again; one that called
// runtime.Goexit was asked again at each collection, and ended the
// exporter's goroutine each time. The right behaviour: it is taken for no
// delegate either, and asked no more.
func TestRV16cLearnDelegateMeterGoexitNotAskedAgain(t *testing.T) {
	if !ownProcess(t) {
		return
	}
	g, err := ObserveSemaphore("g", ctxsync.NewSemaphore(1))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Unregister()
	sdk := sdkmetric.NewMeterProvider()
	defer sdk.Shutdown(context.Background())
	set := &goexitMeters{MeterProvider: sdk}
	otel.SetMeterProvider(set)
	set.armed.Store(true)
	for range 3 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			learnDelegate(false)
		}()
		<-done
	}
	if n := set.calls.Load(); n != 1 {
		t.Errorf("the Meter that called runtime.Goexit was asked %d times, want once", n)
	}
	if n := asking.Load(); n != 0 {
		t.Errorf("asking = %d once every look ended, want 0", n)
	}
	if learned.Load() {
		t.Error("the provider whose Meter called runtime.Goexit was taken for the delegate")
	}
}
