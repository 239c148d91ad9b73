package ctxsyncprom_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctxsync/ctxsync/pool"
)

// review2Sample returns the one sample of the family named name (with the
// namespace) for the pool named pool: a counter's value, or a histogram's
// count and sum.
func review2Sample(t *testing.T, reg prometheus.Gatherer, name, pool string) (value float64, count uint64, sum float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == pool {
					if h := m.GetHistogram(); h != nil {
						return 0, h.GetSampleCount(), h.GetSampleSum()
					}
					return m.GetCounter().GetValue(), 0, 0
				}
			}
		}
	}
	t.Fatalf("no %s for pool %s", name, pool)
	return 0, 0, 0
}

// TestReview2PoolWaitMetricsAgree: after Acquires that waited and were
// served by a release, by a new resource, by a failed New, or gave up with
// their ctx (cancelled, timed out) or with the pool's Close, the metrics
// agree with Stats and with each other: waits_total is Stats.WaitCount and
// the count of acquire_wait_seconds; wait_duration_seconds_total is
// Stats.WaitDuration and the sum of that histogram; waits_total is never
// above empty_acquires_total.
func TestReview2PoolWaitMetricsAgree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		fail := false
		var mu sync.Mutex
		p, err := pool.New(pool.Config[int]{
			New: func(ctx context.Context) (int, error) {
				time.Sleep(3 * time.Millisecond)
				mu.Lock()
				defer mu.Unlock()
				if fail {
					return 0, errors.New("review: down")
				}
				return 1, nil
			},
			MaxSize: 2,
			Hooks:   c.PoolHooks("p"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddPool("p", p); err != nil {
			t.Fatal(err)
		}

		a, err := p.Acquire(context.Background()) // waits for New: 3ms
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Acquire(context.Background()) // the same
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				ctx, cancel := context.WithCancel(context.Background())
				if i == 1 {
					cancel()
					ctx, cancel = context.WithTimeout(context.Background(), 2*time.Millisecond)
				}
				defer cancel()
				if i == 0 {
					time.AfterFunc(time.Millisecond, cancel)
				}
				r, err := p.Acquire(ctx)
				if err == nil {
					time.Sleep(time.Millisecond)
					r.Destroy() // its place goes to a new resource
				}
			})
			time.Sleep(time.Microsecond) // queued in this order
		}
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		fail = true
		mu.Unlock()
		a.Release()
		b.Destroy()
		time.Sleep(20 * time.Millisecond)
		if err := p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()

		st := p.Stats()
		if st.WaitCount == 0 || st.CanceledAcquires == 0 {
			t.Fatalf("the scenario did not play out: %+v", st)
		}
		waits, _, _ := review2Sample(t, reg, "ctxsync_pool_waits_total", "p")
		dur, _, _ := review2Sample(t, reg, "ctxsync_pool_wait_duration_seconds_total", "p")
		empty, _, _ := review2Sample(t, reg, "ctxsync_pool_empty_acquires_total", "p")
		_, hcount, hsum := review2Sample(t, reg, "ctxsync_pool_acquire_wait_seconds", "p")
		if waits != float64(st.WaitCount) || hcount != uint64(st.WaitCount) {
			t.Errorf("waits_total %v, acquire_wait_seconds count %d, Stats %+v", waits, hcount, st)
		}
		if waits > empty {
			t.Errorf("waits_total %v above empty_acquires_total %v", waits, empty)
		}
		if dur != st.WaitDuration.Seconds() {
			t.Errorf("wait_duration_seconds_total %v, Stats.WaitDuration %v", dur, st.WaitDuration)
		}
		if math.IsNaN(hsum) || math.Abs(dur-hsum) > 1e-9*float64(hcount+1) {
			t.Errorf("acquire_wait_seconds sum %v, wait_duration_seconds_total %v", hsum, dur)
		}
	})
}
