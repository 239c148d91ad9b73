package ctxsyncotel

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
)

// twinProvider is one of two providers whose Meters are one SDK Meter, as
// the global provider and the one it delegates to are: the package keys
// their series apart until it merges them; the SDK adds up what both
// report. It counts the callbacks registered and not yet unregistered, and
// runs hook, once, in the next RegisterCallback, before the SDK's.
type twinProvider struct {
	metric.MeterProvider
	meter *twinMeter
}

func (p *twinProvider) Meter(string, ...metric.MeterOption) metric.Meter { return p.meter }

type twinMeter struct {
	metric.Meter
	live *atomic.Int64
	hook func()
}

func (m *twinMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	if h := m.hook; h != nil {
		m.hook = nil
		h()
	}
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err != nil {
		return nil, err
	}
	m.live.Add(1)
	return &twinRegistration{Registration: reg, live: m.live}, nil
}

type twinRegistration struct {
	metric.Registration
	live *atomic.Int64
	done bool
}

func (r *twinRegistration) Unregister() error {
	if err := r.Registration.Unregister(); err != nil {
		return err
	}
	if !r.done {
		r.done = true
		r.live.Add(-1)
	}
	return nil
}

// observeSemaphoreIn is ObserveSemaphore with the series kept in tb.
func observeSemaphoreIn(tb *seriesCounters, s *ctxsync.Semaphore, p metric.MeterProvider) (metric.Registration, error) {
	return observeCounting("ObserveSemaphore", "semaphore", "s", s, func() { s.Available() }, []Option{WithMeterProvider(p)}, tb, 0,
		func(m metric.Meter) (metric.Int64ObservableUpDownCounter, []metric.Observable, error) {
			inst, err := m.Int64ObservableUpDownCounter("ctxsync.semaphore.available")
			return inst, []metric.Observable{inst}, err
		},
		func(all []metric.ObserveOption, _ *counters, _ uint64) func(metric.Observer, metric.Int64ObservableUpDownCounter) {
			return func(o metric.Observer, inst metric.Int64ObservableUpDownCounter) {
				o.ObserveInt64(inst, int64(s.Available()), all...)
			}
		})
}

// observeWatchIn is ObserveWatch with the series kept in tb.
func observeWatchIn(tb *seriesCounters, w *ctxsync.Watch[int], p metric.MeterProvider) (metric.Registration, error) {
	return observeCounting("ObserveWatch", "watch", "w", w, func() { w.Version() }, []Option{WithMeterProvider(p)}, tb, 1,
		func(m metric.Meter) (metric.Int64ObservableCounter, []metric.Observable, error) {
			inst, err := m.Int64ObservableCounter("ctxsync.watch.version")
			return inst, []metric.Observable{inst}, err
		},
		func(all []metric.ObserveOption, counts *counters, token uint64) func(metric.Observer, metric.Int64ObservableCounter) {
			return func(o metric.Observer, inst metric.Int64ObservableCounter) {
				seq := counts.start()
				v := [1]int64{int64(w.Version())}
				counts.applyFrom(token, seq, v[:])
				o.ObserveInt64(inst, v[0], all...)
			}
		})
}

// FuzzOTel16MergeModel runs a script of Observe calls through two providers
// that report to one SDK series (the global provider and the one it
// delegates to), Unregisters, Stores, collections, and one merge of the
// first provider's series into the second's (as when the package learns the
// delegate), maybe made from within the Meter's RegisterCallback of an
// Observe under way. It checks each collection against a model: before the
// merge, the SDK adds up the newest semaphore of each provider; after it,
// the newest registration in force of the two alone is reported, and none
// with none. From the merge on, the Watch's counter never falls, from the
// sum the SDK showed last, never counts more than the versions of the
// Watches observed, and is reported while a registration is in force. Once all ended, no point is left, and no callback is
// registered with the Meter.
func FuzzOTel16MergeModel(f *testing.F) {
	f.Add([]byte{0, 1, 8, 9, 7, 5, 7, 2, 7, 10, 7, 3, 7})
	f.Add([]byte{0, 8, 1, 6, 7, 2, 7, 10, 7, 9, 7, 2, 2, 7})
	f.Add([]byte{8, 16, 0, 14, 7, 4, 7, 3, 11, 7, 2, 18, 7})
	f.Add([]byte{0, 2, 8, 10, 1, 9, 14, 7, 3, 3, 7})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 200 {
			script = script[:200]
		}
		runMergeScript(t, script)
	})
}

func runMergeScript(t *testing.T, script []byte) {
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	var live atomic.Int64
	meter := &twinMeter{Meter: scopeMeter(sdk), live: &live}
	twins := [2]*twinProvider{{sdk, meter}, {sdk, meter}}
	var sems, watches seriesCounters
	type reg struct {
		reg   metric.Registration
		via   int
		value int64
		w     *ctxsync.Watch[int]
	}
	var (
		regs   []reg // semaphores and Watches, in the order observed
		merged bool
		next   int64 = 1
		bound  int64
		shown  int64
	)
	merge := func() {
		merged = true
		for _, tb := range []*seriesCounters{&sems, &watches} {
			tb.mu.Lock()
			tb.moveLocked(sourceOf(twins[0]), sourceOf(twins[1]))
			tb.mu.Unlock()
		}
	}
	observe := func(via int, watch bool) {
		if merged {
			via = 1 // the global provider's lookups go to the delegate's series
		}
		var rg reg
		var err error
		if watch {
			w := ctxsync.NewWatch(0)
			bound++
			rg = reg{via: via, w: w}
			rg.reg, err = observeWatchIn(&watches, w, twins[via])
		} else {
			rg = reg{via: via, value: next}
			rg.reg, err = observeSemaphoreIn(&sems, ctxsync.NewSemaphore(int(next)), twins[via])
			next++
		}
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, rg)
	}
	check := func(step int) {
		var rm metricdata.ResourceMetrics
		if err := r.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		got := map[string][]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
					got[m.Name] = append(got[m.Name], p.Value)
				}
			}
		}
		var want []int64
		newest := [2]int64{}
		for _, rg := range regs {
			if rg.w == nil {
				newest[rg.via] = rg.value
			}
		}
		switch {
		case !merged && newest[0]+newest[1] > 0:
			want = []int64{newest[0] + newest[1]}
		case merged:
			for _, rg := range slices.Backward(regs) {
				if rg.w == nil {
					want = []int64{rg.value}
					break
				}
			}
		}
		if !slices.Equal(got["ctxsync.semaphore.available"], want) {
			t.Fatalf("step %d (merged %v): ctxsync.semaphore.available %v, want %v", step, merged, got["ctxsync.semaphore.available"], want)
		}
		inForce := [2]bool{}
		for _, rg := range regs {
			if rg.w != nil {
				inForce[rg.via] = true
			}
		}
		v := got["ctxsync.watch.version"]
		switch {
		case (inForce[0] || inForce[1]) && len(v) == 0:
			t.Fatalf("step %d: no ctxsync.watch.version with a Watch in force", step)
		case !inForce[0] && !inForce[1] && len(v) > 0:
			t.Fatalf("step %d: ctxsync.watch.version %v with no Watch in force", step, v)
		case merged && len(v) > 1:
			t.Fatalf("step %d: ctxsync.watch.version %v, reported twice once merged", step, v)
		}
		var sum int64
		for _, n := range v {
			sum += n
		}
		if len(v) > 0 {
			// Before the merge, the two series are apart, each a
			// counter of its own: their sum falls when one ends (the
			// delegating provider's report nowhere, in truth, until
			// it delegates). From the merge on, one never falls, and
			// starts at least at the sum shown last.
			if merged && sum < shown {
				t.Fatalf("step %d (merged %v): ctxsync.watch.version %d, fell from %d", step, merged, sum, shown)
			}
			if merged && sum > bound {
				t.Fatalf("step %d: ctxsync.watch.version %d, above %d, the versions of every Watch observed", step, sum, bound)
			}
			shown = sum
		}
	}
	for step, b := range script {
		op, arg := b%8, int(b>>3)
		switch op {
		case 0, 1:
			observe(arg%2, op == 1)
		case 2, 3:
			if len(regs) == 0 {
				continue
			}
			i := arg % len(regs)
			if err := regs[i].reg.Unregister(); err != nil {
				t.Fatal(err)
			}
			regs = append(regs[:i], regs[i+1:]...)
		case 4:
			for _, rg := range regs {
				if rg.w != nil && arg%2 == 0 {
					rg.w.Store(arg)
					bound++
				}
			}
		case 5:
			if !merged {
				merge()
			}
		case 6:
			// An Observe under way through the delegate when the
			// merge comes, as one made as the package learns it.
			if !merged {
				meter.hook = merge
				observe(1, arg%2 == 1)
			}
		case 7:
			check(step)
		}
	}
	check(len(script))
	for _, rg := range regs {
		if err := rg.reg.Unregister(); err != nil {
			t.Fatal(err)
		}
	}
	regs = nil
	check(len(script) + 1)
	if n := live.Load(); n != 0 {
		t.Fatalf("%d callbacks left registered with the Meter once all ended, want none", n)
	}
}
