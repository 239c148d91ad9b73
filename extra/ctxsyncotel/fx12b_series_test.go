package ctxsyncotel_test

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
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
