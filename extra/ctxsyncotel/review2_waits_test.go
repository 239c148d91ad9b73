package ctxsyncotel_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

// TestReview2PoolWaitMetricsAgree: after Acquires that waited and were
// served by a release, by a new resource, by a failed New, or gave up with
// their ctx (cancelled, timed out) or with the pool's Close,
// ctxsync.pool.waits is Stats.WaitCount and the count of
// db.client.connection.wait_time, ctxsync.pool.wait_duration is
// Stats.WaitDuration and that histogram's sum, and waits are never above
// ctxsync.pool.empty_acquires.
func TestReview2PoolWaitMetricsAgree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		m, err := ctxsyncotel.NewPoolMetrics("db", mp)
		if err != nil {
			t.Fatal(err)
		}
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
			Hooks:   m.Hooks(pool.Hooks{}),
		})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := m.Observe(p)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = reg.Unregister() }()

		a, err := p.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Acquire(context.Background())
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
					r.Destroy()
				}
			})
			time.Sleep(time.Microsecond)
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
		c := collect(t, r)
		waits := c.point(t, "ctxsync.pool.waits")
		empty := c.point(t, "ctxsync.pool.empty_acquires")
		dur := c.fpoint(t, "ctxsync.pool.wait_duration")
		h := c.hist(t, "db.client.connection.wait_time")
		if waits != st.WaitCount || h.Count != uint64(st.WaitCount) {
			t.Errorf("ctxsync.pool.waits %d, wait_time count %d, Stats %+v", waits, h.Count, st)
		}
		if waits > empty {
			t.Errorf("ctxsync.pool.waits %d above empty_acquires %d", waits, empty)
		}
		if dur != st.WaitDuration.Seconds() {
			t.Errorf("ctxsync.pool.wait_duration %v, Stats.WaitDuration %v", dur, st.WaitDuration)
		}
		if math.IsNaN(h.Sum) || math.Abs(dur-h.Sum) > 1e-9*float64(h.Count+1) {
			t.Errorf("wait_time sum %v, ctxsync.pool.wait_duration %v", h.Sum, dur)
		}
	})
}
