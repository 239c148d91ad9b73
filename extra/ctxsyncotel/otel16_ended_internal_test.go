package ctxsyncotel

import (
	"context"
	"strconv"
	"testing"

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
func endedKept() int {
	watchCounters.mu.Lock()
	defer watchCounters.mu.Unlock()
	return max(watchCounters.peak, endedKeptMin)
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
	n := endedKept()
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
func TestOTel16EndedNamesKeptAsManyAsInForce(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	opt := WithMeterProvider(mp)
	n := endedKept() + 100
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
