package ctxsyncotel_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// liveProvider counts the callbacks registered with its Meter and not yet
// unregistered, from any goroutine. Its Meter of a scope is one value, as
// the SDK's is.
type liveProvider struct {
	metric.MeterProvider
	once  sync.Once
	meter metric.Meter
	live  atomic.Int64
}

func (p *liveProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	if name != ctxsyncotel.ScopeName {
		return p.MeterProvider.Meter(name, opts...)
	}
	p.once.Do(func() { p.meter = &liveMeter{p.MeterProvider.Meter(name, opts...), p} })
	return p.meter
}

type liveMeter struct {
	metric.Meter
	p *liveProvider
}

func (m *liveMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err == nil {
		m.p.live.Add(1)
		reg = &liveRegistration{Registration: reg, p: m.p}
	}
	return reg, err
}

type liveRegistration struct {
	metric.Registration
	p    *liveProvider
	done atomic.Bool
}

func (r *liveRegistration) Unregister() error {
	err := r.Registration.Unregister()
	if err == nil && r.done.CompareAndSwap(false, true) {
		r.p.live.Add(-1)
	}
	return err
}

// TestOTel16GlobalProviderHammer: semaphores and Watches observed and
// unregistered at random under two names, through the global provider and
// through a provider given by WithMeterProvider, while collections run and
// the provider is set as the global one at a random moment. No collection
// shows two semaphores added up (each has a number of permits of its own,
// in [2^20, 2^21), which no sum of two is), a Watch's counter never falls,
// and once every registration ended no point is left and no callback is
// registered with the Meter.
func TestOTel16GlobalProviderHammer(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	mp := &liveProvider{MeterProvider: sdk}
	const workers, ops = 4, 300
	names := []string{"a", "b"}
	var made sync.Map // the permits of every semaphore made
	var wg sync.WaitGroup
	var stop atomic.Bool
	var setting atomic.Int32 // 1 while otel.SetMeterProvider runs, 2 after
	var collector sync.WaitGroup
	collector.Add(1)
	go func() {
		defer collector.Done()
		shown := map[string]int64{}
		for !stop.Load() {
			runtime.Gosched() // the workers wait for the SDK's lock that a collection holds
			var rm metricdata.ResourceMetrics
			before := setting.Load()
			if err := r.Collect(context.Background(), &rm); err != nil {
				t.Error(err)
				return
			}
			during := before == 1 || setting.Load() != before
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					sum, ok := m.Data.(metricdata.Sum[int64])
					if !ok {
						continue
					}
					for _, p := range sum.DataPoints {
						name, _ := p.Attributes.Value("ctxsync.semaphore.name")
						if m.Name == "ctxsync.watch.version" {
							name, _ = p.Attributes.Value("ctxsync.watch.name")
							if k := name.AsString(); p.Value < shown[k] {
								t.Errorf("ctxsync.watch.version{%s} = %d, fell from %d (during otel.SetMeterProvider: %v)", k, p.Value, shown[k], during)
							} else if !during {
								shown[k] = p.Value
							}
						}
						if m.Name != "ctxsync.semaphore.available" {
							continue
						}
						if _, ok := made.Load(p.Value); !ok && !during {
							t.Errorf("ctxsync.semaphore.available{%s} = %d, no semaphore's: two added up (during otel.SetMeterProvider: %v)", name.AsString(), p.Value, during)
						}
					}
				}
			}
		}
	}()
	regs := make([][]metric.Registration, workers)
	phase := func() {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range ops {
					if len(regs[w]) > 0 && rand.IntN(2) == 0 {
						j := rand.IntN(len(regs[w]))
						if err := regs[w][j].Unregister(); err != nil {
							t.Error(err)
						}
						regs[w] = append(regs[w][:j], regs[w][j+1:]...)
						continue
					}
					var opts []ctxsyncotel.Option
					if rand.IntN(2) == 0 {
						opts = append(opts, ctxsyncotel.WithMeterProvider(mp))
					}
					name := names[rand.IntN(len(names))]
					permits := 1<<20 + rand.IntN(1<<20)
					made.Store(int64(permits), true)
					reg, err := ctxsyncotel.ObserveSemaphore(name, ctxsync.NewSemaphore(permits), opts...)
					if err != nil {
						t.Error(err)
						continue
					}
					regs[w] = append(regs[w], reg)
					wa := ctxsync.NewWatch(0)
					for range rand.IntN(5) {
						wa.Store(1)
					}
					reg, err = ctxsyncotel.ObserveWatch(name, wa, opts...)
					if err != nil {
						t.Error(err)
						continue
					}
					regs[w] = append(regs[w], reg)
				}
			}()
		}
		wg.Wait()
	}
	phase()
	// Between the phases: the global provider's registrations, unregistered
	// while otel.SetMeterProvider delegates them, can deadlock the two in
	// the OpenTelemetry API (a lock order of its own). Collections go on.
	setting.Store(1)
	otel.SetMeterProvider(mp)
	setting.Store(2)
	phase()
	for _, rs := range regs {
		for _, reg := range rs {
			if err := reg.Unregister(); err != nil {
				t.Error(err)
			}
		}
	}
	wg.Wait()
	stop.Store(true)
	collector.Wait()
	globalSet = true
	c := collect(t, r)
	if n := c.points("ctxsync.semaphore.available") + c.points("ctxsync.watch.version"); n != 0 {
		t.Errorf("%d points once every registration ended, want none", n)
	}
	if n := mp.live.Load(); n != 0 {
		t.Errorf("%d callbacks left registered with the Meter once every registration ended, want none", n)
	}
}
