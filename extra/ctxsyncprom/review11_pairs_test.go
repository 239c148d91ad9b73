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

// drainedBetweenReads is a Queue whose items are all taken and marked done
// just after each read of its length: the consumers that run between a
// scrape's read of Len and its read of Unfinished.
type drainedBetweenReads struct{ *ctxsync.Queue[int] }

func (q drainedBetweenReads) Len() int {
	n := q.Queue.Len()
	for {
		if _, ok := q.TryGet(); !ok {
			break
		}
		q.TaskDone()
	}
	return n
}

// TestReview11QueueItemsWithinUnfinished pins a defect: a scrape read a
// queue's Len and Unfinished apart, so that consumers that took and
// finished items between them gave queue_items above
// queue_unfinished_tasks, a pair no moment of the queue holds (the items
// in the queue are unfinished): the tasks in progress (unfinished - items)
// came out negative. Found here: items 5 beside unfinished 0. The right
// behaviour: each scrape gives a pair with items <= unfinished.
func TestReview11QueueItemsWithinUnfinished(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	q := ctxsync.NewQueue[int](0)
	if err := c.AddQueue("q", drainedBetweenReads{q}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		q.TryPut(i)
	}
	mfs, err := c.Gather()
	if err != nil {
		t.Fatal(err)
	}
	items := review11GaugeOf(t, mfs, "ctxsync_queue_items", "q")
	unfinished := review11GaugeOf(t, mfs, "ctxsync_queue_unfinished_tasks", "q")
	if items > unfinished {
		t.Errorf("one scrape: queue_items %v > queue_unfinished_tasks %v", items, unfinished)
	}

	// The same with a real queue, filled and drained while it is scraped.
	real := ctxsync.NewQueue[int](0)
	if err := c.AddQueue("real", real); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i := range 50 {
				real.TryPut(i)
			}
			for {
				if _, ok := real.TryGet(); !ok {
					break
				}
				real.TaskDone()
			}
		}
	})
	for range 2000 {
		mfs, err := c.Gather()
		if err != nil {
			t.Fatal(err)
		}
		items := review11GaugeOf(t, mfs, "ctxsync_queue_items", "real")
		unfinished := review11GaugeOf(t, mfs, "ctxsync_queue_unfinished_tasks", "real")
		if items > unfinished {
			t.Errorf("scrape while filled and drained: queue_items %v > queue_unfinished_tasks %v", items, unfinished)
			break
		}
	}
	close(stop)
	wg.Wait()
}
