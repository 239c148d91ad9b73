package ctxsyncotel

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
)

// watchVersion collects r and returns the version reported for the Watch
// named name, and whether there is one.
func watchVersion(t *testing.T, r *sdkmetric.ManualReader, name string) (int64, bool) {
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
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if v, _ := p.Attributes.Value(WatchNameKey); v.AsString() == name {
					return p.Value, true
				}
			}
		}
	}
	return 0, false
}

// endedKept returns how many series with no registration in force the
// table of ObserveWatch keeps at most now.
func endedKeptNow() int {
	watchCounters.mu.Lock()
	defer watchCounters.mu.Unlock()
	return max(watchCounters.peak, endedKept)
}

// watchAt returns a Watch at version v.
func watchAt(v int) *ctxsync.Watch[int] {
	w := ctxsync.NewWatch(0)
	for i := range v - 1 {
		w.Store(i)
	}
	return w
}

// TestOTel16EndedNameDroppedCountsAnew pins a decision: the counts of a
// name of ObserveWatch whose last registration ended before those of as
// many other names as the table keeps are dropped, and the name, observed
// again, counts from its Watch's own version, as a new name does. One that
// ended more recently carries on.
func TestOTel16EndedNameDroppedCountsAnew(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	opt := WithMeterProvider(mp)
	pair := func(name string, w *ctxsync.Watch[int], collect bool) int64 {
		t.Helper()
		reg, err := ObserveWatch(name, w, opt)
		if err != nil {
			t.Fatal(err)
		}
		var v int64
		if collect {
			v, _ = watchVersion(t, r, name)
		}
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := pair("old", watchAt(10), true); got != 10 {
		t.Fatalf("version %d, want 10", got)
	}
	if got := pair("recent", watchAt(10), true); got != 10 {
		t.Fatalf("version %d, want 10", got)
	}
	n := endedKeptNow()
	for i := range n - 1 {
		pair("other"+strconv.Itoa(i), watchAt(1), false)
	}
	// "old" is dropped, "recent" is the oldest kept.
	if got := pair("recent", watchAt(1), true); got != 11 {
		t.Errorf("a name that ended %d names ago: version %d, want 11 (10 carried on, and 1)", n-1, got)
	}
	if got := pair("old", watchAt(1), true); got != 1 {
		t.Errorf("a name that ended %d names ago: version %d, want 1, counted anew", n+1, got)
	}
}

// TestOTel16EndedNamesKeptAsManyAsInForce: as many names as were in force
// at once, more than endedKeptMin, all unregistered and then observed anew
// with new Watches (a reload that ends every registration first), each carry
// their counters on.
//
// n grows with the most names the process ever had in force, by 100 at each
// run of the test (-count): no cardinality limit, so that the SDK's default
// of 2000 series an instrument does not fold the last names into its
// overflow series.
func TestOTel16EndedNamesKeptAsManyAsInForce(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r), sdkmetric.WithCardinalityLimit(0))
	defer mp.Shutdown(context.Background())
	opt := WithMeterProvider(mp)
	n := endedKeptNow() + 100
	observeAll := func(v int) []*seriesRegistration {
		regs := make([]*seriesRegistration, n)
		for i := range regs {
			reg, err := ObserveWatch("many"+strconv.Itoa(i), watchAt(v), opt)
			if err != nil {
				t.Fatal(err)
			}
			regs[i] = reg.(*seriesRegistration)
		}
		return regs
	}
	unregisterAll := func(regs []*seriesRegistration) {
		for _, reg := range regs {
			if err := reg.Unregister(); err != nil {
				t.Fatal(err)
			}
		}
	}
	regs := observeAll(5)
	for _, name := range []string{"many0", "many" + strconv.Itoa(n-1)} {
		if got, _ := watchVersion(t, r, name); got != 5 {
			t.Fatalf("%s: version %d, want 5", name, got)
		}
	}
	unregisterAll(regs)
	regs = observeAll(1)
	defer unregisterAll(regs)
	for _, name := range []string{"many0", "many" + strconv.Itoa(n/2), "many" + strconv.Itoa(n-1)} {
		if got, _ := watchVersion(t, r, name); got != 6 {
			t.Errorf("%s, one of %d names in force at once, ended and observed anew: version %d, want 6 (5 carried on, and 1)", name, n, got)
		}
	}
}

// TestOTel16HammerEndedSeriesDropped: Watches observed and unregistered at
// random under many names by several goroutines, while collections run,
// with the table keeping at most two series with no registration in force
// or as many as were in force at once (and so dropping them all the time): no collection reports a name twice,
// and once all ended, the table holds no series in force, and its list of
// ended series only idle ones, no more than it may keep.
func TestOTel16HammerEndedSeriesDropped(t *testing.T) {
	defer func(n int) { endedKept = n }(endedKept)
	endedKept = 2
	var tb seriesCounters
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	// More names than can be in force at once (each goroutine holds two
	// registrations at most): peak stays below them, and series go.
	var names []string
	for i := range 40 {
		names = append(names, "n"+strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	var stop atomic.Bool
	collector := make(chan struct{})
	go func() {
		defer close(collector)
		for !stop.Load() {
			runtime.Gosched()
			var rm metricdata.ResourceMetrics
			if err := r.Collect(context.Background(), &rm); err != nil {
				t.Error(err)
				return
			}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					seen := map[string]bool{}
					for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
						v, _ := p.Attributes.Value(WatchNameKey)
						if seen[v.AsString()] {
							t.Errorf("%s reported twice in one collection", v.AsString())
						}
						seen[v.AsString()] = true
					}
				}
			}
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var regs []metric.Registration
			for range 300 {
				if len(regs) == 2 || len(regs) > 0 && rand.IntN(2) == 0 {
					i := rand.IntN(len(regs))
					if err := regs[i].Unregister(); err != nil {
						t.Error(err)
					}
					regs = append(regs[:i], regs[i+1:]...)
					continue
				}
				w := watchAt(1 + rand.IntN(3))
				reg, err := observeCounting("ObserveWatch", "watch", names[rand.IntN(len(names))], w, func() {}, []Option{WithMeterProvider(mp)}, &tb, 1,
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
				if err != nil {
					t.Error(err)
					continue
				}
				regs = append(regs, reg)
			}
			for _, reg := range regs {
				if err := reg.Unregister(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	<-collector
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.peak >= len(names) {
		t.Fatalf("%d series in force at once, want fewer than the %d names, for some to be dropped", tb.peak, len(names))
	}
	if tb.ended.Len() > max(tb.peak, endedKept) {
		t.Errorf("%d ended series kept, want at most %d", tb.ended.Len(), max(tb.peak, endedKept))
	}
	for e := tb.ended.Front(); e != nil; e = e.Next() {
		k := e.Value.(*counters)
		k.mu.Lock()
		if !k.idleLocked() || tb.m[k.key] != k || k.ended != e {
			t.Errorf("series %v on the list of ended ones: idle %v, the table's %v", k.key, k.idleLocked(), tb.m[k.key] == k)
		}
		k.mu.Unlock()
	}
	if n := len(tb.m) - tb.ended.Len(); n != 0 {
		t.Errorf("%d series in force once every registration ended, want none", n)
	}
}
