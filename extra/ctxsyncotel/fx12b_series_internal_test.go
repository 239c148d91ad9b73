package ctxsyncotel

import (
	"reflect"
	"runtime"
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TestSeriesCountersSweepAmortized pins a cost of the counters kept per
// MeterProvider and attribute set: every new series looked at every series
// kept, for those of providers collected, so observing n names cost n²/2
// looks: 20,000 ObserveWatch calls under names of their own took 12 s,
// against 36 ms for as many ObserveWaitGroup calls, and each further one
// 0.6 ms, growing. The right behaviour: the sweep runs once the table has
// grown by half since the last, so its cost per new series is constant,
// amortized, and the table still holds at most about twice the series of
// live providers. Counted, not timed: sweepAt, the size at which the next
// sweep runs, moves only when one runs.
func TestSeriesCountersSweepAmortized(t *testing.T) {
	const n = 10000
	mp := sdkmetric.NewMeterProvider()
	var s seriesCounters
	field := func() reflect.Value { return reflect.ValueOf(&s).Elem().FieldByName("sweepAt") }
	if !field().IsValid() {
		t.Fatal("seriesCounters has no sweep threshold: every new series sweeps the whole table, n²/2 looks for n names")
	}
	sweeps, at := 0, field().Int()
	for i := range n {
		s.of(mp, attribute.NewSet(attribute.String("name", strconv.Itoa(i))), 1)
		if now := field().Int(); now != at {
			sweeps, at = sweeps+1, now
		}
	}
	if len(s.m) != n {
		t.Fatalf("%d series kept, want %d (their provider lives)", len(s.m), n)
	}
	if sweeps > 20 {
		t.Errorf("%d sweeps of the table for %d new series, want about log₂(%d)", sweeps, n, n)
	}
}

// TestSeriesCountersDropCollectedProviders: the series of providers
// collected go, once series of live ones have been added: the table does not
// keep a provider made per test, or per reload, for good.
func TestSeriesCountersDropCollectedProviders(t *testing.T) {
	const n = 1000
	var s seriesCounters
	set := attribute.NewSet(attribute.String("name", "x"))
	for range n {
		mp := sdkmetric.NewMeterProvider()
		s.of(mp, set, 1)
	}
	runtime.GC()
	live := sdkmetric.NewMeterProvider()
	for i := range n {
		s.of(live, attribute.NewSet(attribute.String("name", strconv.Itoa(i))), 1)
	}
	if len(s.m) != n {
		t.Errorf("%d series kept after %d providers were collected and %d series of a live one added, want %d", len(s.m), n, n, n)
	}
	runtime.KeepAlive(live)
}
