package ctxsyncotel_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestReview11WatchVersionNeverFallsOnANewWatch pins a defect left open:
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
	t.Skip("open: ObserveWatch and ObserveAdaptiveLimiter keep nothing between registrations; carrying their counters on needs state per MeterProvider and name that the package does not hold (see the review report)")
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
