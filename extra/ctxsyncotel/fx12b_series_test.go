package ctxsyncotel_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestObservedCountersOfTwoNamesBothReported: Watches observed under two
// names, or one name with two attribute sets, through one provider, each
// read at every collection, all report their own version at every
// collection. TestObservedCountersKeepTheirSeriesApart could not fail on
// counters kept per provider alone, not per attribute set: its first
// Watch's count was never read before the second was observed, and its
// series was never looked at, though it then reported nothing (the second
// registration, made last, was the only one counted). This one fails so.
func TestObservedCountersOfTwoNamesBothReported(t *testing.T) {
	r, opt := newProvider(t)
	wa, wb, wc := ctxsync.NewWatch(0), ctxsync.NewWatch(0), ctxsync.NewWatch(0)
	for i := range 4 {
		wa.Store(i) // version 5
	}
	wb.Store(1) // version 2
	rega, err := ctxsyncotel.ObserveWatch("a", wa, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer rega.Unregister()
	collect(t, r) // a's 5 read
	regb, err := ctxsyncotel.ObserveWatch("b", wb, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer regb.Unregister()
	regc, err := ctxsyncotel.ObserveWatch("a", wc, opt, ctxsyncotel.WithAttributes(attribute.String("shard", "c")))
	if err != nil {
		t.Fatal(err)
	}
	defer regc.Unregister()
	for round := range 2 {
		c := collect(t, r)
		for _, p := range []struct {
			set  attribute.Set
			want int64
		}{
			{attribute.NewSet(ctxsyncotel.WatchNameKey.String("a")), 5},
			{attribute.NewSet(ctxsyncotel.WatchNameKey.String("b")), 2},
			{attribute.NewSet(ctxsyncotel.WatchNameKey.String("a"), attribute.String("shard", "c")), 1},
		} {
			if got, ok := exactPoint(c, "ctxsync.watch.version", p.set); !ok || got != p.want {
				t.Errorf("collection %d: version{%s} = %d (reported: %v), want %d", round, p.set.Encoded(attribute.DefaultEncoder()), got, ok, p.want)
			}
		}
	}
}

// exactPoint returns the value of the int64 sum name's point whose
// attributes are set, and whether there is one.
func exactPoint(c collected, name string, set attribute.Set) (int64, bool) {
	d, ok := c[name].Data.(metricdata.Sum[int64])
	if !ok {
		return 0, false
	}
	for _, p := range d.DataPoints {
		if p.Attributes.Equals(&set) {
			return p.Value, true
		}
	}
	return 0, false
}

// TestObservedCounterBackToTheRegistrationLeft pins a defect of "the
// registration made last is the one counted": once it ended, the
// registration made before it under the name, still in force, reported
// nothing, for good: the series of a Watch still observed vanished (a
// reload that observed a new Watch, then failed and unregistered it, left
// the old one unreported). ObserveWatch's doc counts the Watch observed
// last only while two registrations are in force. The right behaviour: the
// registration left is counted again, carrying on from the count reached,
// with neither a fall nor a climb without a Store, and its Stores counted.
func TestObservedCounterBackToTheRegistrationLeft(t *testing.T) {
	r, opt := newProvider(t)
	set := attribute.NewSet(ctxsyncotel.WatchNameKey.String("config"))
	version := func(step string) int64 {
		t.Helper()
		got, ok := exactPoint(collect(t, r), "ctxsync.watch.version", set)
		if !ok {
			t.Fatalf("%s: no ctxsync.watch.version{config} reported", step)
		}
		return got
	}
	w1, w2 := ctxsync.NewWatch(0), ctxsync.NewWatch(0)
	for i := range 9 {
		w1.Store(i) // version 10
	}
	reg1, err := ctxsyncotel.ObserveWatch("config", w1, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer reg1.Unregister()
	if got := version("first Watch"); got != 10 {
		t.Fatalf("first Watch: %d, want 10", got)
	}
	reg2, err := ctxsyncotel.ObserveWatch("config", w2, opt)
	if err != nil {
		t.Fatal(err)
	}
	w2.Store(1) // version 2
	if got := version("second Watch"); got != 12 {
		t.Fatalf("second Watch: %d, want 12 (10, then its 2)", got)
	}
	if err := reg2.Unregister(); err != nil {
		t.Fatal(err)
	}
	if got := version("back to the first Watch"); got != 12 {
		t.Errorf("back to the first Watch, no Store since: %d, want 12", got)
	}
	w1.Store(10) // version 11: one Store
	w1.Store(11) // version 12: two
	if got := version("first Watch, two Stores on"); got != 14 {
		t.Errorf("first Watch, two Stores on: %d, want 14", got)
	}
	_ = reg1.Unregister()
	reg3, err := ctxsyncotel.ObserveWatch("config", w2, opt) // the second again, alone
	if err != nil {
		t.Fatal(err)
	}
	defer reg3.Unregister()
	if got := version("second Watch again"); got < 14 {
		t.Errorf("second Watch observed again: %d, fell below 14", got)
	}
}

// TestObservedCounterRandomRegistrations: Watches made anew, observed under
// one name through two providers, registrations ended in any order, Stores
// between collections: each provider's counter never falls, never counts
// more than the versions of the Watches observed through it (none twice),
// and is reported while a registration is in force.
func TestObservedCounterRandomRegistrations(t *testing.T) {
	type reg struct {
		r metric.Registration
		w *ctxsync.Watch[int]
	}
	for seed := range uint64(20) {
		rnd := rand.New(rand.NewPCG(seed, 12))
		var readers [2]*sdkmetric.ManualReader
		var opts [2]ctxsyncotel.Option
		for p := range 2 {
			readers[p], opts[p] = newProvider(t)
		}
		set := attribute.NewSet(ctxsyncotel.WatchNameKey.String("config"))
		var (
			live    [2][]reg
			bound   [2]int64 // the versions of every Watch observed through the provider
			last    [2]int64
			counted [2]map[*ctxsync.Watch[int]]uint64 // the version of each when last bounded
		)
		for p := range 2 {
			counted[p] = map[*ctxsync.Watch[int]]uint64{}
		}
		for step := range 200 {
			p := rnd.IntN(2)
			switch op := rnd.IntN(4); {
			case op == 0 || len(live[p]) == 0:
				w := ctxsync.NewWatch(0)
				for range rnd.IntN(5) {
					w.Store(0)
				}
				r, err := ctxsyncotel.ObserveWatch("config", w, opts[p])
				if err != nil {
					t.Fatal(err)
				}
				live[p] = append(live[p], reg{r, w})
			case op == 1:
				i := rnd.IntN(len(live[p]))
				if err := live[p][i].r.Unregister(); err != nil {
					t.Fatal(err)
				}
				live[p] = append(live[p][:i], live[p][i+1:]...)
			default:
				live[p][rnd.IntN(len(live[p]))].w.Store(0)
			}
			for q := range 2 {
				for _, l := range live[q] {
					v := l.w.Version()
					bound[q] += int64(v - counted[q][l.w])
					counted[q][l.w] = v
				}
				got, ok := exactPoint(collect(t, readers[q]), "ctxsync.watch.version", set)
				if !ok {
					if len(live[q]) > 0 {
						t.Fatalf("seed %d step %d provider %d: not reported, with %d registrations in force", seed, step, q, len(live[q]))
					}
					continue
				}
				if got < last[q] || got > bound[q] {
					t.Fatalf("seed %d step %d provider %d: %d after %d, want from %d to %d (the versions observed)", seed, step, q, got, last[q], last[q], bound[q])
				}
				last[q] = got
			}
		}
		for p := range 2 {
			for _, l := range live[p] {
				_ = l.r.Unregister()
			}
		}
	}
}

// TestObservedCounterConcurrentCollections: two readers of one provider
// collect all the time while Watches are observed and unregistered under
// one name and stored to: each reader sees the counter never fall, and the
// race detector sees no race between registrations, their ends and the
// collections.
func TestObservedCounterConcurrentCollections(t *testing.T) {
	r1, r2 := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r1), sdkmetric.WithReader(r2))
	defer mp.Shutdown(context.Background())
	opt := ctxsyncotel.WithMeterProvider(mp)
	set := attribute.NewSet(ctxsyncotel.WatchNameKey.String("config"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, r := range []*sdkmetric.ManualReader{r1, r2, r1, r2} {
		wg.Go(func() {
			var last int64
			for {
				select {
				case <-stop:
					return
				default:
				}
				var rm metricdata.ResourceMetrics
				if err := r.Collect(context.Background(), &rm); err != nil {
					t.Error(err)
					return
				}
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "ctxsync.watch.version" {
							for _, p := range d.DataPoints {
								if p.Attributes.Equals(&set) {
									if p.Value < last {
										t.Errorf("version fell from %d to %d", last, p.Value)
									}
									last = p.Value
								}
							}
						}
					}
				}
			}
		})
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	var live []metric.Registration
	var watches []*ctxsync.Watch[int]
	for range hammerRounds(150) {
		switch op := rnd.IntN(3); {
		case op == 0 || len(live) == 0:
			w := ctxsync.NewWatch(0)
			reg, err := ctxsyncotel.ObserveWatch("config", w, opt)
			if err != nil {
				t.Fatal(err)
			}
			live, watches = append(live, reg), append(watches, w)
		case op == 1:
			i := rnd.IntN(len(live))
			if err := live[i].Unregister(); err != nil {
				t.Fatal(err)
			}
			live, watches = append(live[:i], live[i+1:]...), append(watches[:i], watches[i+1:]...)
		default:
			watches[rnd.IntN(len(watches))].Store(1)
		}
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	for _, reg := range live {
		_ = reg.Unregister()
	}
}
