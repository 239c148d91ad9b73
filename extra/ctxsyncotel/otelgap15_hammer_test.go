package ctxsyncotel_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// gapRecord is what the hammer below knows of one registration: the moments,
// on its clock, at which its Observe began and returned and its Unregister
// began and returned (0 until then), and the value its source reports.
type gapRecord struct {
	value                            int64
	obsBegin, obsEnd, unBegin, unEnd atomic.Int64
}

// inForce reports whether r was in force from t0 to t1 throughout: its
// Observe returned before t0, and its Unregister was not called by t1.
func (r *gapRecord) inForce(t0, t1 int64) bool {
	end := r.obsEnd.Load()
	begun := r.unBegin.Load()
	return end != 0 && end < t0 && (begun == 0 || begun > t1)
}

// mayReport reports whether r may have been read by a collection from t0 to
// t1: its Observe began before t1, and its Unregister had not returned by t0.
func (r *gapRecord) mayReport(t0, t1 int64) bool {
	begin := r.obsBegin.Load()
	done := r.unEnd.Load()
	return begin != 0 && begin < t1 && (done == 0 || done > t0)
}

// gapSeries are the registrations made under one series of the hammer.
type gapSeries struct {
	name string
	mu   sync.Mutex
	recs []*gapRecord
}

func (s *gapSeries) all() []*gapRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*gapRecord(nil), s.recs...)
}

// TestOtelGap15HammerOneReportPerSeries: registrations of ObserveSemaphore
// under a few series, made and ended at random by several goroutines, while
// a ManualReader collects in a loop. Each source reports a value of its own,
// from 2^20 to 2^21, so that a series reported by two registrations in one
// collection (which the SDK adds up) shows as a sum no source has. At every
// collection: a series with a registration in force throughout is reported;
// one with no registration that could have been read is not; a series
// reported has the value of a source that could have been read, and not of
// one that a registration made after it, in force throughout, had taken
// over. Once every registration ended, no series is reported.
func TestOtelGap15HammerOneReportPerSeries(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	opt := ctxsyncotel.WithMeterProvider(mp)
	var clock atomic.Int64
	clock.Add(1)
	series := []*gapSeries{{name: "a"}, {name: "b"}, {name: "c"}}
	var values atomic.Int64

	stop := make(chan struct{})
	var failed atomic.Bool
	var collectors sync.WaitGroup
	collectors.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			t0 := clock.Add(1)
			c := collect(t, r)
			t1 := clock.Add(1)
			for _, s := range series {
				if err := checkGapSeries(c, s, t0, t1); err != nil {
					if !failed.Swap(true) {
						t.Errorf("collection %d: %v", n, err)
					}
					return
				}
			}
		}
	})

	rounds := hammerRounds(300)
	var workers sync.WaitGroup
	for w := range 3 {
		workers.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 15))
			type mine struct {
				rec *gapRecord
				reg metric.Registration
			}
			var live []mine
			end := func(i int) {
				m := live[i]
				live = append(live[:i], live[i+1:]...)
				m.rec.unBegin.Store(clock.Add(1))
				if err := m.reg.Unregister(); err != nil {
					t.Error(err)
				}
				m.rec.unEnd.Store(clock.Add(1))
			}
			for range rounds {
				if failed.Load() {
					break
				}
				if len(live) == 0 || rnd.IntN(2) == 0 {
					s := series[rnd.IntN(len(series))]
					rec := &gapRecord{value: 1<<20 + values.Add(1)}
					s.mu.Lock()
					s.recs = append(s.recs, rec)
					s.mu.Unlock()
					rec.obsBegin.Store(clock.Add(1))
					reg, err := ctxsyncotel.ObserveSemaphore(s.name, ctxsync.NewSemaphore(int(rec.value)), opt)
					if err != nil {
						t.Error(err)
						return
					}
					rec.obsEnd.Store(clock.Add(1))
					live = append(live, mine{rec, reg})
				} else {
					end(rnd.IntN(len(live)))
				}
				runtime.Gosched()
			}
			for len(live) > 0 {
				end(len(live) - 1)
			}
		})
	}
	workers.Wait()
	close(stop)
	collectors.Wait()
	c := collect(t, r)
	if n := c.points("ctxsync.semaphore.available"); n != 0 {
		t.Errorf("ctxsync.semaphore.available: %d points after every registration ended, want none", n)
	}
	if n := c.points("ctxsync.semaphore.waiting"); n != 0 {
		t.Errorf("ctxsync.semaphore.waiting: %d points after every registration ended, want none", n)
	}
}

// checkGapSeries checks the point of s in c, collected from t0 to t1 (see
// TestOtelGap15HammerOneReportPerSeries).
func checkGapSeries(c collected, s *gapSeries, t0, t1 int64) error {
	recs := s.all()
	set := attribute.NewSet(ctxsyncotel.SemaphoreNameKey.String(s.name))
	got, reported := exactPoint(c, "ctxsync.semaphore.available", set)
	_, waiting := exactPoint(c, "ctxsync.semaphore.waiting", set)
	if waiting != reported {
		return fmt.Errorf("series %s: available reported %v, waiting %v: one callback reports both", s.name, reported, waiting)
	}
	var inForce, may []*gapRecord
	for _, r := range recs {
		if r.inForce(t0, t1) {
			inForce = append(inForce, r)
		}
		if r.mayReport(t0, t1) {
			may = append(may, r)
		}
	}
	switch {
	case !reported && len(inForce) > 0:
		return fmt.Errorf("series %s not reported, with %d registrations in force throughout the collection", s.name, len(inForce))
	case reported && len(may) == 0:
		return fmt.Errorf("series %s reported (%d) with no registration that could be read", s.name, got)
	case !reported:
		return nil
	}
	var src *gapRecord
	for _, r := range may {
		if r.value == got {
			src = r
		}
	}
	if src == nil {
		return fmt.Errorf("series %s reported %d, the value of no source that could be read (%d of them): two registrations added up?", s.name, got, len(may))
	}
	// A source whose Observe has not returned yet (its obsEnd still 0)
	// may be the newest: it took the series over before it returned.
	for _, r := range inForce {
		if end := src.obsEnd.Load(); end != 0 && r.obsBegin.Load() > end {
			return fmt.Errorf("series %s reported %d, its source's, though a registration made after it (%d) was in force throughout", s.name, got, r.value)
		}
	}
	return nil
}

// TestOtelGap15HammerWatchCounter: the hammer above for ObserveWatch, whose
// counter carries on from the source before: at every collection the series
// is reported while a registration is in force throughout, not once none
// could be read, and never falls; after the last Unregister it is gone.
func TestOtelGap15HammerWatchCounter(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	opt := ctxsyncotel.WithMeterProvider(mp)
	var clock atomic.Int64
	clock.Add(1)
	s := &gapSeries{name: "w"}
	set := attribute.NewSet(ctxsyncotel.WatchNameKey.String("w"))
	stop := make(chan struct{})
	var failed atomic.Bool
	var collectors sync.WaitGroup
	collectors.Go(func() {
		var last int64
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			t0 := clock.Add(1)
			var rm metricdata.ResourceMetrics
			if err := r.Collect(context.Background(), &rm); err != nil {
				t.Error(err)
				return
			}
			t1 := clock.Add(1)
			c := collected{}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					c[m.Name] = m
				}
			}
			got, reported := exactPoint(c, "ctxsync.watch.version", set)
			var inForce, may int
			for _, rec := range s.all() {
				if rec.inForce(t0, t1) {
					inForce++
				}
				if rec.mayReport(t0, t1) {
					may++
				}
			}
			var err error
			switch {
			case !reported && inForce > 0:
				err = fmt.Errorf("not reported, with %d registrations in force throughout", inForce)
			case reported && may == 0:
				err = fmt.Errorf("reported (%d) with no registration that could be read", got)
			case reported && got < last:
				err = fmt.Errorf("fell from %d to %d", last, got)
			}
			if err != nil {
				if !failed.Swap(true) {
					t.Errorf("collection %d: ctxsync.watch.version: %v", n, err)
				}
				return
			}
			if reported {
				last = got
			}
		}
	})
	rounds := hammerRounds(300)
	var workers sync.WaitGroup
	for w := range 3 {
		workers.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 16))
			type mine struct {
				rec *gapRecord
				reg metric.Registration
				w   *ctxsync.Watch[int]
			}
			var live []mine
			end := func(i int) {
				m := live[i]
				live = append(live[:i], live[i+1:]...)
				m.rec.unBegin.Store(clock.Add(1))
				if err := m.reg.Unregister(); err != nil {
					t.Error(err)
				}
				m.rec.unEnd.Store(clock.Add(1))
			}
			for range rounds {
				if failed.Load() {
					break
				}
				switch op := rnd.IntN(3); {
				case op == 0 || len(live) == 0:
					rec := &gapRecord{}
					s.mu.Lock()
					s.recs = append(s.recs, rec)
					s.mu.Unlock()
					wa := ctxsync.NewWatch(0)
					for range rnd.IntN(4) {
						wa.Store(1)
					}
					rec.obsBegin.Store(clock.Add(1))
					reg, err := ctxsyncotel.ObserveWatch("w", wa, opt)
					if err != nil {
						t.Error(err)
						return
					}
					rec.obsEnd.Store(clock.Add(1))
					live = append(live, mine{rec, reg, wa})
				case op == 1:
					end(rnd.IntN(len(live)))
				default:
					live[rnd.IntN(len(live))].w.Store(2)
				}
				runtime.Gosched()
			}
			for len(live) > 0 {
				end(len(live) - 1)
			}
		})
	}
	workers.Wait()
	close(stop)
	collectors.Wait()
	if _, ok := exactPoint(collect(t, r), "ctxsync.watch.version", set); ok {
		t.Error("ctxsync.watch.version reported after every registration ended")
	}
}
