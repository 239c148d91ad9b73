package ctxsyncotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestReview11WatchVersionNeverFallsOnANewWatch pins a defect:
// ObserveWatch reports ctxsync.watch.version, a monotonic counter, as the
// Watch's Version. A Watch made anew (on a reload) and observed under the
// name once the first registration ended starts again from 1: the counter
// fell from 10 to 1 with its start time unchanged, and a delta reader got
// -9 on a monotonic sum. ObserveAdaptiveLimiter's ctxsync.adaptive.shed
// does the same for a new Limiter. PoolMetrics, BreakerMetrics and
// LimiterMetrics carry their counters on (see counters); these Observe
// functions are functions, with no value to keep what they read last. The
// right behaviour: the counter never goes down.
func TestReview11WatchVersionNeverFallsOnANewWatch(t *testing.T) {
	for _, tem := range []metricdata.Temporality{metricdata.CumulativeTemporality, metricdata.DeltaTemporality} {
		t.Run(tem.String(), func(t *testing.T) {
			r := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return tem }))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
			defer mp.Shutdown(context.Background())
			opt := ctxsyncotel.WithMeterProvider(mp)
			last := map[string]float64{}
			w1 := ctxsync.NewWatch(0)
			reg, err := ctxsyncotel.ObserveWatch("config", w1, opt)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 9 {
				w1.Store(i)
			}
			if n := review11Monotonic(t, r, tem, last, "first Watch, version 10"); n != 1 {
				t.Fatalf("%d monotonic points, want 1", n)
			}
			_ = reg.Unregister()
			reg, err = ctxsyncotel.ObserveWatch("config", ctxsync.NewWatch(0), opt)
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Unregister()
			review11Monotonic(t, r, tem, last, "second Watch, version 1")
		})
	}
}

// shedSource is an AdaptiveSource whose Shed count the test sets.
type shedSource struct{ shed int64 }

func (s *shedSource) Limit() int             { return 1 }
func (s *shedSource) InFlight() int          { return 0 }
func (s *shedSource) Waiting() int           { return 0 }
func (s *shedSource) Shed() int64            { return s.shed }
func (s *shedSource) Latency() time.Duration { return time.Millisecond }

// TestAdaptiveShedNeverFallsOnANewLimiter pins the same defect for
// ObserveAdaptiveLimiter: ctxsync.adaptive.shed, a monotonic counter, was
// the Limiter's Shed as read, and fell from 7 to 2 when a Limiter made anew
// was observed under the name once the first registration ended. The right
// behaviour: the counter carries on, by what the new Limiter sheds.
func TestAdaptiveShedNeverFallsOnANewLimiter(t *testing.T) {
	for _, tem := range []metricdata.Temporality{metricdata.CumulativeTemporality, metricdata.DeltaTemporality} {
		t.Run(tem.String(), func(t *testing.T) {
			r := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return tem }))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
			defer mp.Shutdown(context.Background())
			opt := ctxsyncotel.WithMeterProvider(mp)
			last := map[string]float64{}
			l1 := &shedSource{shed: 7}
			reg, err := ctxsyncotel.ObserveAdaptiveLimiter("api", l1, opt)
			if err != nil {
				t.Fatal(err)
			}
			if n := review11Monotonic(t, r, tem, last, "first Limiter, 7 shed"); n != 1 {
				t.Fatalf("%d monotonic points, want 1", n)
			}
			_ = reg.Unregister()
			l2 := &shedSource{shed: 2}
			reg, err = ctxsyncotel.ObserveAdaptiveLimiter("api", l2, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Unregister()
			review11Monotonic(t, r, tem, last, "second Limiter, 2 shed")
			if tem == metricdata.CumulativeTemporality {
				if got := last["ctxsync.adaptive.shed{ctxsync.adaptive.name=api}"]; got != 9 {
					t.Errorf("ctxsync.adaptive.shed = %v after 7 and then 2 shed, want 9", got)
				}
			}
			// The second Limiter's next shed call adds to the count.
			l2.shed = 3
			review11Monotonic(t, r, tem, last, "second Limiter, 3 shed")
		})
	}
}

// TestObservedCountersKeepTheirSeriesApart: the counts that ObserveWatch
// carries on belong to one series, a MeterProvider's and an attribute set's:
// a Watch observed under the name of another with other attributes, or
// through another provider, reports its own version, not the sum.
func TestObservedCountersKeepTheirSeriesApart(t *testing.T) {
	r1, opt1 := newProvider(t)
	r2, opt2 := newProvider(t)
	w1, w2, w3 := ctxsync.NewWatch(0), ctxsync.NewWatch(0), ctxsync.NewWatch(0)
	for i := range 4 {
		w1.Store(i) // version 5
	}
	w2.Store(1) // version 2
	reg1, err := ctxsyncotel.ObserveWatch("config", w1, opt1)
	if err != nil {
		t.Fatal(err)
	}
	defer reg1.Unregister()
	reg2, err := ctxsyncotel.ObserveWatch("config", w2, opt1, ctxsyncotel.WithAttributes(attribute.String("shard", "b")))
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Unregister()
	reg3, err := ctxsyncotel.ObserveWatch("config", w3, opt2)
	if err != nil {
		t.Fatal(err)
	}
	defer reg3.Unregister()
	c1 := collect(t, r1)
	if got := c1.point(t, "ctxsync.watch.version", ctxsyncotel.WatchNameKey.String("config"), attribute.String("shard", "b")); got != 2 {
		t.Errorf("version of the Watch with attributes of its own = %d, want 2", got)
	}
	if got := collect(t, r2).point(t, "ctxsync.watch.version", ctxsyncotel.WatchNameKey.String("config")); got != 1 {
		t.Errorf("version of the Watch of another provider = %d, want 1", got)
	}
}

// TestObservedCounterTwoRegistrationsAtOnce: two Watches observed under one
// name at once report one series (the package doc says so), and the counter
// must not fall when the registration of the earlier one ends: before, the
// SDK added the two versions up (10+1), and the sum fell to 1 when the
// first Watch's registration ended. The Watch observed last is the one
// counted, carrying on from the first's count; the earlier registration,
// while it lasts, reports no counter of its own.
func TestObservedCounterTwoRegistrationsAtOnce(t *testing.T) {
	r, opt := newProvider(t)
	last := map[string]float64{}
	w1, w2 := ctxsync.NewWatch(0), ctxsync.NewWatch(0)
	for i := range 9 {
		w1.Store(i) // version 10
	}
	reg1, err := ctxsyncotel.ObserveWatch("config", w1, opt)
	if err != nil {
		t.Fatal(err)
	}
	review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "first Watch, version 10")
	reg2, err := ctxsyncotel.ObserveWatch("config", w2, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Unregister()
	review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "both Watches")
	review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "both Watches, again")
	_ = reg1.Unregister()
	review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "second Watch alone, version 1")
	w2.Store(1)
	review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "second Watch alone, version 2")
	if got := last["ctxsync.watch.version{ctxsync.watch.name=config}"]; got != 12 {
		t.Errorf("ctxsync.watch.version = %v, want 12: 10 counted by the first Watch, then 2 by the second (its version)", got)
	}
}
