package ctxsyncotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// review11Monotonic collects r and checks every point of a monotonic sum
// against the last collection's, in last: a cumulative one must not fall,
// a delta one must not be negative. It returns how many points it checked.
func review11Monotonic(t *testing.T, r *sdkmetric.ManualReader, tem metricdata.Temporality, last map[string]float64, step string) int {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	n := 0
	check := func(name string, attrs attribute.Set, v float64) {
		t.Helper()
		n++
		key := name + "{" + attrs.Encoded(attribute.DefaultEncoder()) + "}"
		if tem == metricdata.DeltaTemporality {
			if v < 0 {
				t.Errorf("%s: %s delta %v, want >= 0", step, key, v)
			}
			return
		}
		if v < last[key] {
			t.Errorf("%s: %s went down from %v to %v", step, key, last[key], v)
		}
		last[key] = v
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if d.IsMonotonic {
					for _, p := range d.DataPoints {
						check(m.Name, p.Attributes, float64(p.Value))
					}
				}
			case metricdata.Sum[float64]:
				if d.IsMonotonic {
					for _, p := range d.DataPoints {
						check(m.Name, p.Attributes, p.Value)
					}
				}
			}
		}
	}
	return n
}

// TestReview11CountersNeverFallOnANewSource pins a defect: PoolMetrics and
// LimiterMetrics observe one source at a time, and may observe another once
// the first registration ends (a pool or a limiter made anew on a reload of
// the configuration), but their counters reported the new source's counts
// as they were, so that ctxsync.pool.acquires fell from 5 to 2 with its
// start time unchanged (OpenTelemetry marks a restart by a new start time,
// which an observable counter cannot give), and a delta reader got -3 on a
// monotonic sum. The right behaviour: the counters never go down; they
// carry on from where they were, by what the new source counts.
func TestReview11CountersNeverFallOnANewSource(t *testing.T) {
	for _, tem := range []metricdata.Temporality{metricdata.CumulativeTemporality, metricdata.DeltaTemporality} {
		t.Run(tem.String(), func(t *testing.T) {
			r := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return tem }))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
			defer mp.Shutdown(context.Background())
			opt := ctxsyncotel.WithMeterProvider(mp)
			pm, err := ctxsyncotel.NewPoolMetrics("db", opt)
			if err != nil {
				t.Fatal(err)
			}
			lm, err := ctxsyncotel.NewLimiterMetrics("api", opt)
			if err != nil {
				t.Fatal(err)
			}
			newPool := func() *pool.Pool[int] {
				p, err := pool.New(pool.Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 1})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			use := func(p *pool.Pool[int], tally *ratelimit.Tally, n int) {
				lim := tally.Wrap(ratelimit.NewTokenBucket(1e9, 1e9))
				for range n {
					r, err := p.Acquire(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					r.Release()
					lim.AllowN(1)
					_ = lim.WaitN(context.Background(), 1)
				}
				if err := p.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			last := map[string]float64{}

			p1, t1 := newPool(), &ratelimit.Tally{}
			preg, err := pm.Observe(p1)
			if err != nil {
				t.Fatal(err)
			}
			lreg, err := lm.Observe(t1)
			if err != nil {
				t.Fatal(err)
			}
			use(p1, t1, 5)
			if n := review11Monotonic(t, r, tem, last, "first pool and Tally, 5 uses"); n == 0 {
				t.Fatal("no monotonic sum collected")
			}

			// Made anew: the first registrations end, the new sources
			// are observed, and used less.
			_ = preg.Unregister()
			_ = lreg.Unregister()
			p2, t2 := newPool(), &ratelimit.Tally{}
			preg, err = pm.Observe(p2)
			if err != nil {
				t.Fatal(err)
			}
			defer preg.Unregister()
			lreg, err = lm.Observe(t2)
			if err != nil {
				t.Fatal(err)
			}
			defer lreg.Unregister()
			use(p2, t2, 2)
			review11Monotonic(t, r, tem, last, "second pool and Tally, 2 uses")
		})
	}
}
