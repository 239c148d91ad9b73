package ctxsyncotel_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// chaosProvider gives Meters whose RegisterCallback, and whose
// registrations' Unregister, fail at random, one call in eight, before the
// SDK's; it counts the callbacks registered with the SDK and not yet
// unregistered from it.
type chaosProvider struct {
	metric.MeterProvider
	live atomic.Int64
}

var errChaos = errors.New("chaos")

func chaos() bool { return rand.IntN(8) == 0 }

func (p *chaosProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &chaosMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

type chaosMeter struct {
	metric.Meter
	p *chaosProvider
}

func (m *chaosMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	if chaos() {
		return nil, errChaos
	}
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err != nil {
		return nil, err
	}
	m.p.live.Add(1)
	return &chaosRegistration{Registration: reg, p: m.p}, nil
}

type chaosRegistration struct {
	metric.Registration
	p    *chaosProvider
	done atomic.Bool
}

func (r *chaosRegistration) Unregister() error {
	if chaos() {
		return errChaos
	}
	if err := r.Registration.Unregister(); err != nil {
		return err
	}
	if !r.done.Swap(true) {
		r.p.live.Add(-1)
	}
	return nil
}

// TestRV15bHammerTwoReadersAndAFailingMeter: the hammers of otelgap15 with
// two readers collecting at once, and a Meter that refuses one
// RegisterCallback and one Unregister in eight. Each reader, at each of its
// collections, finds each semaphore series reported once, by a source that
// could be read, while a registration is in force throughout, and the
// Watch's counter never falling; an Unregister refused is called again
// until it succeeds. At the end: the counter no higher than the versions
// of every Watch observed, no point in either reader, and no callback left
// registered with the Meter.
func TestRV15bHammerTwoReadersAndAFailingMeter(t *testing.T) {
	r1, r2 := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r1), sdkmetric.WithReader(r2))
	defer sdk.Shutdown(context.Background())
	p := &chaosProvider{MeterProvider: sdk}
	opt := ctxsyncotel.WithMeterProvider(p)
	var clock atomic.Int64
	clock.Add(1)
	series := []*gapSeries{{name: "a"}, {name: "b"}}
	watchSet := attribute.NewSet(ctxsyncotel.WatchNameKey.String("w"))
	var values atomic.Int64
	var versions atomic.Int64 // of every Watch observed, once its registration ended

	stop := make(chan struct{})
	var failed atomic.Bool
	fail := func(format string, args ...any) {
		if !failed.Swap(true) {
			t.Errorf(format, args...)
		}
	}
	var collectors sync.WaitGroup
	for i, r := range []*sdkmetric.ManualReader{r1, r2} {
		collectors.Go(func() {
			var last int64
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := clock.Add(1)
				c := collect(t, r)
				t1 := clock.Add(1)
				for _, s := range series {
					if err := checkGapSeries(c, s, t0, t1); err != nil {
						fail("reader %d, collection %d: %v", i, n, err)
						return
					}
				}
				if got, ok := exactPoint(c, "ctxsync.watch.version", watchSet); ok {
					if got < last {
						fail("reader %d, collection %d: ctxsync.watch.version fell from %d to %d", i, n, last, got)
						return
					}
					last = got
				}
			}
		})
	}

	rounds := hammerRounds(1000)
	var workers sync.WaitGroup
	for w := range 3 {
		workers.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 0x15b))
			type mine struct {
				rec   *gapRecord
				reg   metric.Registration
				watch *ctxsync.Watch[int]
			}
			var live []mine
			end := func(i int) {
				m := live[i]
				live = append(live[:i], live[i+1:]...)
				if m.rec != nil {
					m.rec.unBegin.Store(clock.Add(1))
				}
				err := m.reg.Unregister()
				if m.rec != nil {
					m.rec.unEnd.Store(clock.Add(1))
				}
				for ; err != nil; err = m.reg.Unregister() {
					if !errors.Is(err, errChaos) {
						fail("Unregister: %v", err)
						return
					}
				}
				if m.watch != nil {
					versions.Add(int64(m.watch.Version()))
				}
			}
			for range rounds {
				if failed.Load() {
					break
				}
				switch op := rnd.IntN(4); {
				case op == 0 || len(live) == 0:
					s := series[rnd.IntN(len(series))]
					rec := &gapRecord{value: 1<<20 + values.Add(1)}
					rec.obsBegin.Store(clock.Add(1))
					s.mu.Lock()
					s.recs = append(s.recs, rec)
					s.mu.Unlock()
					reg, err := ctxsyncotel.ObserveSemaphore(s.name, ctxsync.NewSemaphore(int(rec.value)), opt)
					if err != nil {
						if !errors.Is(err, errChaos) {
							fail("ObserveSemaphore: %v", err)
							return
						}
						// Never in force: ended at once.
						rec.unBegin.Store(clock.Add(1))
						rec.unEnd.Store(clock.Add(1))
						continue
					}
					rec.obsEnd.Store(clock.Add(1))
					live = append(live, mine{rec: rec, reg: reg})
				case op == 1:
					wa := ctxsync.NewWatch(0)
					for range rnd.IntN(4) {
						wa.Store(1)
					}
					reg, err := ctxsyncotel.ObserveWatch("w", wa, opt)
					if err != nil {
						if !errors.Is(err, errChaos) {
							fail("ObserveWatch: %v", err)
							return
						}
						continue
					}
					live = append(live, mine{reg: reg, watch: wa})
				case op == 2:
					end(rnd.IntN(len(live)))
				default:
					if m := live[rnd.IntN(len(live))]; m.watch != nil {
						m.watch.Store(2)
					}
				}
				runtime.Gosched()
			}
			for len(live) > 0 {
				end(len(live) - 1)
			}
		})
	}
	workers.Wait()
	close(stop)
	collectors.Wait()
	for i, r := range []*sdkmetric.ManualReader{r1, r2} {
		c := collect(t, r)
		for _, name := range []string{"ctxsync.semaphore.available", "ctxsync.semaphore.waiting", "ctxsync.watch.version"} {
			if n := c.points(name); n != 0 {
				t.Errorf("reader %d: %s: %d points after every registration ended, want none", i, name, n)
			}
		}
	}
	if n := p.live.Load(); n != 0 {
		t.Errorf("%d callbacks left registered with the Meter after every Unregister succeeded", n)
	}
	// The counter, read once more under a new registration: no higher
	// than the versions of every Watch observed.
	wa := ctxsync.NewWatch(0)
	var reg metric.Registration
	for {
		var err error
		if reg, err = ctxsyncotel.ObserveWatch("w", wa, opt); err == nil {
			break
		}
	}
	got, _ := exactPoint(collect(t, r1), "ctxsync.watch.version", watchSet)
	if most := versions.Load() + 1; got > most {
		t.Errorf("ctxsync.watch.version = %d, more than the %d versions of every Watch observed: a source counted twice", got, most)
	}
	for reg.Unregister() != nil {
	}
}
