package ctxsyncotel_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// review11Calls returns the points of ctxsync.breaker.calls of one
// collection of r, by outcome, and whether the sum is monotonic.
func review11Calls(t *testing.T, r *sdkmetric.ManualReader) (map[string]int64, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	monotonic := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "ctxsync.breaker.calls" {
				continue
			}
			sum := m.Data.(metricdata.Sum[int64])
			monotonic = sum.IsMonotonic
			for _, p := range sum.DataPoints {
				v, _ := p.Attributes.Value(ctxsyncotel.BreakerOutcomeKey)
				got[v.AsString()] = p.Value
			}
		}
	}
	return got, monotonic
}

// TestReview11BreakerCallsNeverGoDown pins a defect: ctxsync.breaker.calls,
// a monotonic counter, was the breaker's Metrics().Total as it is, which
// Breaker.Reset zeroes, and so went down. The doc said a back end reads
// that as a restart, but OpenTelemetry marks a restart by a new start time,
// which an observable counter cannot give: a cumulative reader got a
// monotonic sum that fell (3, then 1) with its start time unchanged, and a
// delta reader a negative delta (-2) on a monotonic sum. So did a
// BreakerMetrics that observes a new breaker after the first's
// registration ends. The right behaviour: the counter never goes down; it
// carries on from where it was, by what each breaker counted since.
func TestReview11BreakerCallsNeverGoDown(t *testing.T) {
	fail := func(b *breaker.Breaker, n int) {
		for range n {
			_ = b.Execute(context.Background(), func(context.Context) error { return errors.New("down") })
		}
	}
	for _, tem := range []metricdata.Temporality{metricdata.CumulativeTemporality, metricdata.DeltaTemporality} {
		t.Run(tem.String(), func(t *testing.T) {
			r := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(func(sdkmetric.InstrumentKind) metricdata.Temporality { return tem }))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
			defer mp.Shutdown(context.Background())
			m, err := ctxsyncotel.NewBreakerMetrics("b", ctxsyncotel.WithMeterProvider(mp))
			if err != nil {
				t.Fatal(err)
			}
			b := breaker.New(breaker.Settings{})
			reg, err := m.Observe(b)
			if err != nil {
				t.Fatal(err)
			}
			var want, last int64 // failures counted, and the last cumulative value
			check := func(step string) {
				t.Helper()
				got, monotonic := review11Calls(t, r)
				if !monotonic {
					t.Fatalf("%s: ctxsync.breaker.calls is not monotonic", step)
				}
				v := got["failure"]
				if tem == metricdata.DeltaTemporality {
					if v < 0 {
						t.Errorf("%s: calls{failure} delta %d, want >= 0", step, v)
					}
					v += last
				}
				if v < last {
					t.Errorf("%s: calls{failure} went down from %d to %d", step, last, v)
				}
				if v != want {
					t.Errorf("%s: calls{failure} = %d, want %d", step, v, want)
				}
				last = v
			}
			fail(b, 3)
			want += 3
			check("3 failures")
			b.Reset()
			fail(b, 1)
			want++
			check("Reset, then 1 failure")

			// Another breaker, observed by the same metrics once the
			// first registration ends: its calls add to those counted.
			if err := reg.Unregister(); err != nil {
				t.Fatal(err)
			}
			b2 := breaker.New(breaker.Settings{})
			fail(b2, 2)
			reg, err = m.Observe(b2)
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Unregister()
			want += 2
			check("a second breaker of 2 failures")
		})
	}
}

// TestReview11BreakerCallsTwoReaders: two readers collect at once while the
// breaker is called and Reset: each sees ctxsync.breaker.calls never go
// down, and at the end neither counts more failures than were made.
func TestReview11BreakerCallsTwoReaders(t *testing.T) {
	r1, r2 := sdkmetric.NewManualReader(), sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r1), sdkmetric.WithReader(r2))
	defer mp.Shutdown(context.Background())
	m, err := ctxsyncotel.NewBreakerMetrics("b", ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	b := breaker.New(breaker.Settings{})
	reg, err := m.Observe(b)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, r := range []*sdkmetric.ManualReader{r1, r2} {
		wg.Go(func() {
			var last int64
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, _ := review11Calls(t, r)
				if v := got["failure"]; v < last {
					t.Errorf("calls{failure} went down from %d to %d", last, v)
					return
				} else {
					last = v
				}
			}
		})
	}
	made := 0
	for i := range 3000 {
		_ = b.Execute(context.Background(), func(context.Context) error { return errors.New("down") })
		made++
		if i%100 == 99 {
			b.Reset()
		}
	}
	close(stop)
	wg.Wait()
	for _, r := range []*sdkmetric.ManualReader{r1, r2} {
		if got, _ := review11Calls(t, r); got["failure"] > int64(made) {
			t.Errorf("calls{failure} = %d, more than the %d failures made", got["failure"], made)
		}
	}
}
