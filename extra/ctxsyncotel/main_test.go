package ctxsyncotel_test

import (
	"context"
	"math"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newProvider returns a MeterProvider read by hand, and the option that
// gives it to a constructor.
func newProvider(t testing.TB) (*sdkmetric.ManualReader, ctxsyncotel.Option) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return r, ctxsyncotel.WithMeterProvider(mp)
}

// collected are the metrics of one collection, by name.
type collected map[string]metricdata.Metrics

func collect(t testing.TB, r *sdkmetric.ManualReader) collected {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	c := make(collected)
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ctxsyncotel.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, ctxsyncotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			c[m.Name] = m
		}
	}
	return c
}

// matches reports whether set holds every one of kvs.
func matches(set attribute.Set, kvs []attribute.KeyValue) bool {
	for _, kv := range kvs {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// point returns the one data point of the metric name whose attributes
// hold kvs, as an int64 (sums and gauges of either number type: floats
// are returned by value in fpoint).
func (c collected) point(t testing.TB, name string, kvs ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := c[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	var got []int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, kvs) {
				got = append(got, p.Value)
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if matches(p.Attributes, kvs) {
				got = append(got, p.Value)
			}
		}
	default:
		t.Fatalf("%s: data %T, not an int64 sum or gauge", name, m.Data)
	}
	if len(got) != 1 {
		t.Fatalf("%s%v: %d data points, want 1", name, kvs, len(got))
	}
	return got[0]
}

func (c collected) fpoint(t testing.TB, name string, kvs ...attribute.KeyValue) float64 {
	t.Helper()
	m, ok := c[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	d, ok := m.Data.(metricdata.Sum[float64])
	if !ok {
		t.Fatalf("%s: data %T, not a float64 sum", name, m.Data)
	}
	var got []float64
	for _, p := range d.DataPoints {
		if matches(p.Attributes, kvs) {
			got = append(got, p.Value)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%s%v: %d data points, want 1", name, kvs, len(got))
	}
	return got[0]
}

// hist returns the one data point of the histogram name whose attributes
// hold kvs; a zero one if there is none.
func (c collected) hist(t testing.TB, name string, kvs ...attribute.KeyValue) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := c[name]
	if !ok {
		return metricdata.HistogramDataPoint[float64]{}
	}
	d, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s: data %T, not a float64 histogram", name, m.Data)
	}
	var got []metricdata.HistogramDataPoint[float64]
	for _, p := range d.DataPoints {
		if matches(p.Attributes, kvs) {
			got = append(got, p)
		}
	}
	switch len(got) {
	case 0:
		return metricdata.HistogramDataPoint[float64]{}
	case 1:
		return got[0]
	}
	t.Fatalf("%s%v: %d data points, want 1", name, kvs, len(got))
	return got[0]
}

// points returns the number of data points of the metric name, 0 if absent.
func (c collected) points(name string) int {
	m, ok := c[name]
	if !ok {
		return 0
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return len(d.DataPoints)
	case metricdata.Sum[float64]:
		return len(d.DataPoints)
	case metricdata.Gauge[int64]:
		return len(d.DataPoints)
	case metricdata.Histogram[float64]:
		return len(d.DataPoints)
	}
	return -1
}

// kind is what an instrument must be.
type kind int

const (
	counter kind = iota
	upDown
	gauge
	histogram
)

// checkKinds checks the kind and unit of every metric of c named in want.
func (c collected) checkKinds(t testing.TB, want map[string]struct {
	kind kind
	unit string
}) {
	t.Helper()
	for name, w := range want {
		m, ok := c[name]
		if !ok {
			t.Errorf("no metric %s", name)
			continue
		}
		if m.Unit != w.unit {
			t.Errorf("%s: unit %q, want %q", name, m.Unit, w.unit)
		}
		if m.Description == "" {
			t.Errorf("%s: no description", name)
		}
		var got kind
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			got = sumKind(t, name, d.IsMonotonic, d.Temporality)
		case metricdata.Sum[float64]:
			got = sumKind(t, name, d.IsMonotonic, d.Temporality)
		case metricdata.Gauge[int64]:
			got = gauge
		case metricdata.Histogram[float64]:
			got = histogram
		default:
			t.Errorf("%s: data %T", name, m.Data)
			continue
		}
		if got != w.kind {
			t.Errorf("%s: kind %d, want %d", name, got, w.kind)
		}
	}
}

func sumKind(t testing.TB, name string, monotonic bool, tem metricdata.Temporality) kind {
	if tem != metricdata.CumulativeTemporality {
		t.Errorf("%s: temporality %v, want cumulative", name, tem)
	}
	if monotonic {
		return counter
	}
	return upDown
}

// near reports whether got is want to within a nanosecond's rounding.
func near(got, want float64) bool { return math.Abs(got-want) < 1e-9 }

func attrString(k, v string) attribute.KeyValue { return attribute.String(k, v) }
