package ctxsyncotel_test

import (
	"math"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// fixedCounts is a LimiterSource whose counts the test sets.
type fixedCounts struct{ c ratelimit.TallyCounts }

func (f *fixedCounts) Counts() ratelimit.TallyCounts { return f.c }

// fixedVersion is a WatchSource whose version the test sets.
type fixedVersion struct{ v uint64 }

func (f *fixedVersion) Version() uint64 { return f.v }

// TestCountersSaturateNearMaxInt64 pins two wraps of counters read from a
// source. One source's count at math.MaxInt64 (a Watch's version clamped
// there, a Tally's count) was reported as math.MinInt64: the SDK adds an
// int64 sum up through a float64, and float64(math.MaxInt64) is 2^63, which
// wraps back to int64 negative; any count from 2^63-512 up does. And a
// counter carried on from one source to the next is the sum of what they
// counted, which wrapped past math.MaxInt64 to a negative count. The right
// behaviour: counts saturate below where the SDK wraps (2^63-1024, the
// largest float64 below 2^63), and never fall.
func TestCountersSaturateNearMaxInt64(t *testing.T) {
	r, opt := newProvider(t)
	last := map[string]float64{}
	lm, err := ctxsyncotel.NewLimiterMetrics("api", opt)
	if err != nil {
		t.Fatal(err)
	}
	observeLimiter := func(c ratelimit.TallyCounts) func() {
		reg, err := lm.Observe(&fixedCounts{c})
		if err != nil {
			t.Fatal(err)
		}
		return func() { _ = reg.Unregister() }
	}
	observeWatch := func(v uint64) func() {
		reg, err := ctxsyncotel.ObserveWatch("config", &fixedVersion{v}, opt)
		if err != nil {
			t.Fatal(err)
		}
		return func() { _ = reg.Unregister() }
	}
	stop1, stop2 := observeLimiter(ratelimit.TallyCounts{Allowed: math.MaxInt64, Refused: math.MaxInt64 - 1}), observeWatch(math.MaxUint64)
	review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "sources at the maximum")
	stop1()
	stop2()
	stop1, stop2 = observeLimiter(ratelimit.TallyCounts{Allowed: 5, Refused: 5}), observeWatch(5)
	defer stop1()
	defer stop2()
	review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "new sources at 5")
	for key, v := range last {
		if v < 0 {
			t.Errorf("%s = %v, want >= 0", key, v)
		}
	}
}

// TestCountersNeverNegative pins counters that reported a source's negative
// count as it was: a LimiterSource or AdaptiveSource of the user's own whose
// count read -1 (a bug of its, or a count that wrapped) made a monotonic
// sum of -1, and one that read 10 and then -5 was taken for a reset, and the
// counter fell from 10 to 5. The right behaviour: a negative count is read
// as 0, and the counter never falls.
func TestCountersNeverNegative(t *testing.T) {
	r, opt := newProvider(t)
	last := map[string]float64{}
	lm, err := ctxsyncotel.NewLimiterMetrics("api", opt)
	if err != nil {
		t.Fatal(err)
	}
	src := &fixedCounts{ratelimit.TallyCounts{Allowed: -1}}
	reg, err := lm.Observe(src)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	shed := &shedSource{shed: -1}
	reg2, err := ctxsyncotel.ObserveAdaptiveLimiter("api", shed, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Unregister()
	for _, n := range []int64{-1, 10, -5, 12} {
		src.c.Allowed, shed.shed = n, n
		review11Monotonic(t, r, metricdata.CumulativeTemporality, last, "counts of "+strconv.FormatInt(n, 10))
		for key, v := range last {
			if v < 0 {
				t.Errorf("after counts of %d: %s = %v, want >= 0", n, key, v)
			}
		}
	}
}
