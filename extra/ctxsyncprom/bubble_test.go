package ctxsyncprom_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
)

// TestCollectorAcrossBubbles: a Collector made and registered outside a
// testing/synctest bubble (a package-level one, say) serves sources made in
// a bubble, scraped there and after the bubble has ended.
func TestCollectorAcrossBubbles(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	synctest.Test(t, func(t *testing.T) {
		p, err := pool.New(pool.Config[int]{
			New: func(context.Context) (int, error) {
				time.Sleep(time.Millisecond)
				return 1, nil
			},
			MaxSize: 1,
			Hooks:   c.PoolHooks("db"),
		})
		if err != nil {
			t.Fatal(err)
		}
		b := breaker.New(breaker.Settings{OnCall: c.BreakerOnCall("api")})
		if err := c.AddPool("db", p); err != nil {
			t.Fatal(err)
		}
		if err := c.AddBreaker("api", b); err != nil {
			t.Fatal(err)
		}
		_ = p.With(context.Background(), func(int) error {
			return b.Execute(context.Background(), func(context.Context) error { return nil })
		})
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("Gather in the bubble: %v", err)
		}
	})
	got := scrapeText(t, c, "ctxsync_pool_acquire_wait_seconds")
	if !strings.Contains(got, `ctxsync_pool_acquire_wait_seconds_sum{name="db"} 0.001`) {
		t.Errorf("scrape after the bubble:\n%s", got)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatalf("Gather after the bubble: %v", err)
	}
}

// TestOwnNameHooksAcrossBubbles: hooks made with no name outside a bubble
// learn a name from an event in one, and go on serving it, and learn
// others, after the bubble has ended: the cache of names holds no channel
// or timer of the bubble's.
func TestOwnNameHooksAcrossBubbles(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	hooks := c.PoolHooks("")
	onCall := c.BreakerOnCall("")
	synctest.Test(t, func(t *testing.T) {
		p := newNamedPool(t, "db", hooks)
		b := breaker.New(breaker.Settings{Name: "api", OnCall: onCall})
		_ = p.With(context.Background(), func(int) error {
			return b.Execute(context.Background(), func(context.Context) error { return nil })
		})
		synctest.Wait()
	})
	hooks.OnAcquire(pool.AcquireEvent{Name: "db", Waited: true})
	hooks.OnAcquire(pool.AcquireEvent{Name: "cache", Waited: true})
	onCall(breaker.CallEvent{Name: "api", Outcome: breaker.Success})
	got := seriesNames(t, c, "ctxsync_pool_acquire_wait_seconds")
	if want := "[cache=1 db=2]"; fmt.Sprint(got) != want {
		t.Errorf("acquire_wait_seconds after the bubble = %v, want %s", got, want)
	}
	if got := seriesNames(t, c, "ctxsync_breaker_call_duration_seconds"); fmt.Sprint(got) != "[api/success=2]" {
		t.Errorf("call_duration_seconds after the bubble = %v, want [api/success=2]", got)
	}
}
