package ctxsyncotel_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

// TestMX13HammerGaugesWithinBounds: 32 goroutines use a pool, a semaphore,
// a Weighted, a bounded queue, a KeyedLock and a WaitGroup with contexts
// that end at random, while another collects: every gauge of every
// collection is within its bounds (no negative count; a pool's
// connections, a semaphore's permits, a Weighted's free units and a
// queue's length within their maximum; a queue's length within its
// unfinished tasks), and at the end everything is back at rest.
func TestMX13HammerGaugesWithinBounds(t *testing.T) {
	const (
		maxPool = 3
		permits = 4
		units   = 10
		qcap    = 5
	)
	rounds := hammerRounds(150)
	r, opt := newProvider(t)
	pm, err := ctxsyncotel.NewPoolMetrics("db", opt)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(pool.Config[int]{
		Name: "db",
		New: func(context.Context) (int, error) {
			time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
			return 1, nil
		},
		MaxSize: maxPool,
		Hooks:   pm.Hooks(pool.Hooks{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	sem := ctxsync.NewSemaphore(permits)
	w := ctxsync.NewWeighted(units)
	q := ctxsync.NewQueue[int](qcap)
	var kl ctxsync.KeyedLock[int]
	var wg ctxsync.WaitGroup
	regs := []func() (interface{ Unregister() error }, error){
		func() (interface{ Unregister() error }, error) { return pm.Observe(p) },
		func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveSemaphore("s", sem, opt) },
		func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveWeighted("w", w, opt) },
		func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveQueue("q", q, opt) },
		func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveKeyedLock("k", &kl, opt) },
		func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveWaitGroup("g", &wg, opt) },
	}
	for _, f := range regs {
		reg, err := f()
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
	}

	check := func(what string) {
		c := collect(t, r)
		pt := func(name string, kvs ...attribute.KeyValue) int64 { return c.point(t, name, kvs...) }
		idle := pt("db.client.connection.count", semconv.DBClientConnectionStateIdle)
		used := pt("db.client.connection.count", semconv.DBClientConnectionStateUsed)
		constructing, closing := pt("ctxsync.pool.connection.constructing"), pt("ctxsync.pool.connection.closing")
		if idle < 0 || used < 0 || constructing < 0 || closing < 0 || idle+used+constructing+closing > maxPool {
			t.Errorf("%s: pool idle %d, used %d, constructing %d, closing %d: out of [0, %d]", what, idle, used, constructing, closing, maxPool)
		}
		if n := pt("db.client.connection.pending_requests"); n < 0 {
			t.Errorf("%s: pending requests %d", what, n)
		}
		if a, n := pt("ctxsync.semaphore.available"), pt("ctxsync.semaphore.waiting"); a < 0 || a > permits || n < 0 {
			t.Errorf("%s: semaphore available %d, waiting %d", what, a, n)
		}
		if a, cp, n := pt("ctxsync.weighted.available"), pt("ctxsync.weighted.capacity"), pt("ctxsync.weighted.waiting"); a < 0 || a > cp || cp != units || n < 0 {
			t.Errorf("%s: Weighted available %d, capacity %d, waiting %d", what, a, cp, n)
		}
		l, u := pt("ctxsync.queue.length"), pt("ctxsync.queue.unfinished")
		if l < 0 || l > qcap || l > u {
			t.Errorf("%s: queue length %d, unfinished %d, capacity %d", what, l, u, qcap)
		}
		for _, side := range []string{"get", "put"} {
			if n := pt("ctxsync.queue.waiting", ctxsyncotel.QueueSideKey.String(side)); n < 0 {
				t.Errorf("%s: queue waiting %s %d", what, side, n)
			}
		}
		if n, g := pt("ctxsync.keyedlock.keys"), pt("ctxsync.waitgroup.count"); n < 0 || g < 0 {
			t.Errorf("%s: keyed lock keys %d, waitgroup count %d", what, n, g)
		}
	}

	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			check("collection")
		}
	})
	var workers sync.WaitGroup
	for i := range 32 {
		workers.Go(func() {
			for range rounds {
				ctx, cancel := randomCtx()
				switch (i + rand.IntN(6)) % 6 {
				case 0:
					if res, err := p.Acquire(ctx); err == nil {
						res.Release()
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
					// Not a ctx that never ends: once the producers are
					// done, a consumer would wait for good.
					cancel()
					ctx, cancel = context.WithTimeout(context.Background(), time.Duration(rand.IntN(200))*time.Microsecond)
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
	check("at rest")
	c := collect(t, r)
	for name, want := range map[string]int64{
		"ctxsync.semaphore.available": permits, "ctxsync.weighted.available": units, "ctxsync.queue.length": 0,
		"ctxsync.queue.unfinished": 0, "ctxsync.keyedlock.keys": 0, "ctxsync.waitgroup.count": 0,
	} {
		if got := c.point(t, name); got != want {
			t.Errorf("at rest, %s = %d, want %d", name, got, want)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
