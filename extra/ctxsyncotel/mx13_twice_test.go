package ctxsyncotel_test

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// values returns every int64 data point of a collection, by metric name
// and attributes.
func values(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for name, m := range collect(t, r) {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				out[fmt.Sprint(name, p.Attributes.ToSlice())] = p.Value
			}
		case metricdata.Gauge[int64]:
			for _, p := range d.DataPoints {
				out[fmt.Sprint(name, p.Attributes.ToSlice())] = p.Value
			}
		}
	}
	return out
}

type fixedLen int

func (n fixedLen) Len() int { return int(n) }

// TestMX13SameSourceObservedTwiceNotSummed pins a defect of the Observe
// functions of gauges (ObserveSemaphore, ObserveWeighted, ObserveQueue,
// ObserveLock, ObserveFlight, ObserveKeyedLock, ObserveWaitGroup, and the
// gauges of ObserveAdaptiveLimiter): two registrations in force under one
// name (the same source observed twice, or a source made anew on a reload
// observed before the old one's registration ends) both reported, and the
// SDK added them up: a semaphore of 4 permits, 3 free, showed 6 free, out
// of its bounds; a lock held showed held = 2. ctxsyncprom refuses the
// second source with ErrDuplicateName, and ObserveWatch's counter already
// reports only the registration made last. The right behaviour, as
// ObserveWatch's: the registration made last under a series is the one
// reported, until it ends; then the one before it, if still in force.
func TestMX13SameSourceObservedTwiceNotSummed(t *testing.T) {
	ctx := context.Background()
	sem := ctxsync.NewSemaphore(4)
	_ = sem.Acquire(ctx)
	w := ctxsync.NewWeighted(10)
	_ = w.Acquire(ctx, 3)
	q := ctxsync.NewQueue[int](5)
	_ = q.Put(ctx, 1)
	_ = q.Put(ctx, 2)
	l := ctxsync.NewLock()
	_ = l.Lock(ctx)
	var kl ctxsync.KeyedLock[string]
	_ = kl.Lock(ctx, "a")
	var wg ctxsync.WaitGroup
	wg.Add(2)
	defer wg.Add(-2)
	adaptive := &shedSource{shed: 3}
	cases := map[string]func(ctxsyncotel.Option) (metric.Registration, error){
		"ObserveSemaphore": func(o ctxsyncotel.Option) (metric.Registration, error) {
			return ctxsyncotel.ObserveSemaphore("s", sem, o)
		},
		"ObserveWeighted": func(o ctxsyncotel.Option) (metric.Registration, error) {
			return ctxsyncotel.ObserveWeighted("w", w, o)
		},
		"ObserveQueue": func(o ctxsyncotel.Option) (metric.Registration, error) {
			return ctxsyncotel.ObserveQueue("q", q, o)
		},
		"ObserveLock": func(o ctxsyncotel.Option) (metric.Registration, error) {
			return ctxsyncotel.ObserveLock("l", l, o)
		},
		"ObserveFlight": func(o ctxsyncotel.Option) (metric.Registration, error) {
			return ctxsyncotel.ObserveFlight("f", fixedLen(2), o)
		},
		"ObserveKeyedLock": func(o ctxsyncotel.Option) (metric.Registration, error) {
			return ctxsyncotel.ObserveKeyedLock("k", &kl, o)
		},
		"ObserveWaitGroup": func(o ctxsyncotel.Option) (metric.Registration, error) {
			return ctxsyncotel.ObserveWaitGroup("g", &wg, o)
		},
		"ObserveAdaptiveLimiter": func(o ctxsyncotel.Option) (metric.Registration, error) {
			return ctxsyncotel.ObserveAdaptiveLimiter("a", adaptive, o)
		},
	}
	for fn, observe := range cases {
		t.Run(fn, func(t *testing.T) {
			r, opt := newProvider(t)
			reg1, err := observe(opt)
			if err != nil {
				t.Fatal(err)
			}
			once := values(t, r)
			reg2, err := observe(opt)
			if err != nil {
				t.Fatal(err)
			}
			for step, reg := range []metric.Registration{nil, reg2} {
				if reg != nil {
					_ = reg.Unregister()
				}
				got := values(t, r)
				for k, v := range once {
					if got[k] != v {
						t.Errorf("step %d: %s = %d, want %d as with one registration", step, k, got[k], v)
					}
				}
			}
			_ = reg1.Unregister()
		})
	}
}

// TestMX13SourceMadeAnewReportedAlone: a semaphore made anew (a reload),
// observed under the name of the old one before the old registration
// ends, is the one reported, alone: not the sum of the two.
func TestMX13SourceMadeAnewReportedAlone(t *testing.T) {
	r, opt := newProvider(t)
	old, cur := ctxsync.NewSemaphore(1), ctxsync.NewSemaphore(4)
	reg1, err := ctxsyncotel.ObserveSemaphore("s", old, opt)
	if err != nil {
		t.Fatal(err)
	}
	reg2, err := ctxsyncotel.ObserveSemaphore("s", cur, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Unregister()
	if got := collect(t, r).point(t, "ctxsync.semaphore.available", ctxsyncotel.SemaphoreNameKey.String("s")); got != 4 {
		t.Errorf("available = %d, want 4, the new semaphore's", got)
	}
	_ = reg1.Unregister()
	if got := collect(t, r).point(t, "ctxsync.semaphore.available", ctxsyncotel.SemaphoreNameKey.String("s")); got != 4 {
		t.Errorf("available after the old one's end = %d, want 4", got)
	}
}
