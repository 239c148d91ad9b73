package ctxsyncprom_test

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
)

// review11Gauge returns the value of the gauge named name (with the
// namespace) whose name label is source, from one gather of g.
func review11Gauge(t *testing.T, g prometheus.Gatherer, name, source string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	return review11GaugeOf(t, mfs, name, source)
}

func review11GaugeOf(t *testing.T, mfs []*dto.MetricFamily, name, source string) float64 {
	t.Helper()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == source {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{name=%q}", name, source)
	return 0
}

// resizedBetweenReads is a Weighted that is shrunk to 2 units just after
// each read of its free units: the Resize that lands between a scrape's
// read of Available and its read of Capacity.
type resizedBetweenReads struct{ *ctxsync.Weighted }

func (w resizedBetweenReads) Available() int64 {
	a := w.Weighted.Available()
	w.Resize(2)
	return a
}

// TestReview11WeightedAvailableWithinCapacity pins a defect: a scrape read a
// Weighted's Available and Capacity apart, so that a Resize between them
// (or one half done: Resize sets the capacity before it takes the units
// away) gave semaphore_available above semaphore_capacity, a pair no
// moment of the Weighted holds: held units (capacity - available) came out
// negative on a dashboard. Found here: available 10 beside capacity 2. The
// right behaviour: each scrape gives a pair with available <= capacity,
// read again while the capacity moved under it.
func TestReview11WeightedAvailableWithinCapacity(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	w := ctxsync.NewWeighted(10)
	if err := c.AddWeighted("w", resizedBetweenReads{w}); err != nil {
		t.Fatal(err)
	}
	w.Resize(10) // AddWeighted read it once
	avail := review11Gauge(t, c, "ctxsync_semaphore_available", "w")
	capacity := review11Gauge(t, c, "ctxsync_semaphore_capacity", "w")
	if avail > capacity {
		t.Errorf("one scrape: semaphore_available %v > semaphore_capacity %v", avail, capacity)
	}

	// The same with a real Weighted, resized back and forth while it is
	// scraped through a registry.
	real := ctxsync.NewWeighted(10)
	if err := c.AddWeighted("real", real); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			real.Resize(int64(2 + 8*(i%2)))
		}
	})
	for range 2000 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		a := review11GaugeOf(t, mfs, "ctxsync_semaphore_available", "real")
		cp := review11GaugeOf(t, mfs, "ctxsync_semaphore_capacity", "real")
		if a > cp {
			t.Errorf("scrape while resized: semaphore_available %v > semaphore_capacity %v", a, cp)
			break
		}
	}
	close(stop)
	wg.Wait()
}
