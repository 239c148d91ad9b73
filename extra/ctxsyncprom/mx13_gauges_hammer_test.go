package ctxsyncprom_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
)

// TestMX13HammerGaugesWithinBounds: 32 goroutines use a pool, a semaphore,
// a Weighted, a bounded queue, a KeyedLock and a WaitGroup with contexts
// cancelled at random, while two others scrape, through a registry and
// through Gather: every gauge of every scrape is within its bounds (no
// negative count; a pool's resources, a semaphore's permits, a Weighted's
// free units and a queue's items within their maximum; a queue's items
// within its unfinished tasks), and at the end everything is back at rest.
func TestMX13HammerGaugesWithinBounds(t *testing.T) {
	const (
		maxPool = 3
		permits = 4
		units   = 10
		qcap    = 5
	)
	rounds := hammerRounds(150)
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	p, err := pool.New(pool.Config[int]{
		Name: "db",
		New: func(context.Context) (int, error) {
			time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
			return 1, nil
		},
		MaxSize: maxPool,
		Hooks:   c.PoolHooks(""),
	})
	if err != nil {
		t.Fatal(err)
	}
	sem := ctxsync.NewSemaphore(permits)
	w := ctxsync.NewWeighted(units)
	q := ctxsync.NewQueue[int](qcap)
	var kl ctxsync.KeyedLock[int]
	var wg ctxsync.WaitGroup
	for _, err := range []error{
		c.AddPool("", p), c.AddSemaphore("s", sem), c.AddWeighted("w", w), c.AddQueue("q", q),
		c.AddKeyedLock("k", &kl), c.AddWaitGroup("g", &wg),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}

	check := func(what string, mfs []*dto.MetricFamily) {
		vals := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.Metric {
				key := mf.GetName() + "{" + labelsKey(m) + "}"
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
				if mf.GetType() == dto.MetricType_HISTOGRAM {
					continue
				}
				if v < 0 {
					t.Errorf("%s: %s = %v, below 0", what, key, v)
				}
				vals[key] = v
			}
		}
		res := 0.0
		for _, st := range []string{"closing", "constructing", "idle", "in_use"} {
			res += vals["ctxsync_pool_resources{name=db,state="+st+",}"]
		}
		if res > vals["ctxsync_pool_max_resources{name=db,}"] {
			t.Errorf("%s: the pool's resources add up to %v, above its max %v", what, res, vals["ctxsync_pool_max_resources{name=db,}"])
		}
		if v := vals["ctxsync_semaphore_available{name=s,}"]; v > permits {
			t.Errorf("%s: semaphore available %v, above %d", what, v, permits)
		}
		if a, cp := vals["ctxsync_semaphore_available{name=w,}"], vals["ctxsync_semaphore_capacity{name=w,}"]; a > cp || cp != units {
			t.Errorf("%s: Weighted available %v, capacity %v, want available <= capacity = %d", what, a, cp, units)
		}
		if n, u := vals["ctxsync_queue_items{name=q,}"], vals["ctxsync_queue_unfinished_tasks{name=q,}"]; n > qcap || n > u {
			t.Errorf("%s: queue items %v, unfinished %v, capacity %d", what, n, u, qcap)
		}
	}

	stop := make(chan struct{})
	var side sync.WaitGroup
	for _, g := range []prometheus.Gatherer{reg, c} {
		side.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mfs, err := g.Gather()
				if err != nil {
					t.Errorf("Gather: %v", err)
					return
				}
				check("scrape", mfs)
			}
		})
	}

	var workers sync.WaitGroup
	for i := range 32 {
		workers.Go(func() {
			for range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(200))*time.Microsecond)
				if rand.IntN(4) == 0 {
					cancel()
				}
				switch (i + rand.IntN(6)) % 6 {
				case 0:
					if r, err := p.Acquire(ctx); err == nil {
						r.Release()
					}
				case 1:
					if sem.Acquire(ctx) == nil {
						sem.Release()
					}
				case 2:
					n := int64(1 + rand.IntN(units))
					if w.Acquire(ctx, n) == nil {
						w.Release(n)
					}
				case 3:
					if i%2 == 0 {
						_ = q.Put(ctx, i)
					} else if _, err := q.Get(ctx); err == nil {
						q.TaskDone()
					}
				case 4:
					k := rand.IntN(3)
					if kl.Lock(ctx, k) == nil {
						kl.Unlock(k)
					}
				case 5:
					wg.Go(func() {})
				}
				cancel()
			}
		})
	}
	workers.Wait()
	// Drain what producers left, so that the queue is at rest.
	for {
		if _, ok := q.TryGet(); !ok {
			break
		}
		q.TaskDone()
	}
	if err := wg.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(stop)
	side.Wait()
	mfs, err := c.Gather()
	if err != nil {
		t.Fatal(err)
	}
	check("at rest", mfs)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string]int{
		"semaphore available": sem.Available() - permits, "semaphore waiters": sem.Waiting(),
		"Weighted available": int(w.Available()) - units, "queue items": q.Len(), "queue unfinished": q.Unfinished(),
		"keyed lock keys": kl.Len(), "waitgroup count": wg.Count(),
	} {
		if got != 0 {
			t.Errorf("at rest, %s off by %d", what, got)
		}
	}
}
