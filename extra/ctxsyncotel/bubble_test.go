package ctxsyncotel_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

// TestAcrossBubbles: a provider and metrics made outside a testing/synctest
// bubble (package-level ones, say) serve sources made in a bubble,
// collected there and after the bubble has ended; and metrics made in a
// bubble keep working after it.
func TestAcrossBubbles(t *testing.T) {
	r, mp := newProvider(t)
	pm, err := ctxsyncotel.NewPoolMetrics("db", mp)
	if err != nil {
		t.Fatal(err)
	}
	var inside *ctxsyncotel.BreakerMetrics
	var b *breaker.Breaker
	synctest.Test(t, func(t *testing.T) {
		p, err := pool.New(pool.Config[int]{
			New: func(context.Context) (int, error) {
				time.Sleep(time.Millisecond)
				return 1, nil
			},
			MaxSize: 1,
			Hooks:   pm.Hooks(pool.Hooks{}),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
		if _, err := pm.Observe(p); err != nil {
			t.Fatal(err)
		}
		inside, err = ctxsyncotel.NewBreakerMetrics("api", mp)
		if err != nil {
			t.Fatal(err)
		}
		b = breaker.New(breaker.Settings{OnCall: inside.OnCall(nil), OnStateChange: inside.OnStateChange(nil)})
		if _, err := inside.Observe(b); err != nil {
			t.Fatal(err)
		}
		if err := p.With(context.Background(), func(int) error {
			return b.Execute(context.Background(), func(context.Context) error { return nil })
		}); err != nil {
			t.Fatal(err)
		}
		c := collect(t, r)
		if got := c.point(t, "db.client.connection.count", used); got != 0 {
			t.Errorf("in the bubble: used = %d, want 0", got)
		}
	})
	// After the bubble: collected, and the breaker made in it used again.
	if err := b.Execute(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	b.ForceOpen()
	c := collect(t, r)
	if h := c.hist(t, "db.client.connection.wait_time", poolName); h.Count != 1 || !near(h.Sum, 0.001) {
		t.Errorf("after the bubble: wait_time count %d sum %v, want 1 and 0.001", h.Count, h.Sum)
	}
	if got := c.point(t, "ctxsync.breaker.calls", breakerNameOf("api"), outcome("success")); got != 2 {
		t.Errorf("after the bubble: calls{success} = %d, want 2", got)
	}
	if got := c.point(t, "ctxsync.breaker.state", breakerNameOf("api"), state("open")); got != 1 {
		t.Errorf("after the bubble: state{open} = %d, want 1", got)
	}
}

// TestObserveZeroSources: a source that is the zero value of a type that
// must be made by its constructor panics in Observe, with its package's
// message, not later at a collection in the exporter's goroutine; and the
// metrics are left free to observe another.
func TestObserveZeroSources(t *testing.T) {
	_, mp := newProvider(t)
	pm, _ := ctxsyncotel.NewPoolMetrics("db", mp)
	bm, _ := ctxsyncotel.NewBreakerMetrics("b", mp)
	for what, f := range map[string]func(){
		"PoolMetrics.Observe(&pool.Pool{})":          func() { pm.Observe(&pool.Pool[int]{}) },
		"BreakerMetrics.Observe(&breaker.Breaker{})": func() { bm.Observe(&breaker.Breaker{}) },
	} {
		func() {
			defer func() {
				v := recover()
				if v == nil {
					t.Errorf("%s did not panic", what)
					return
				}
				msg := ""
				switch v := v.(type) {
				case string:
					msg = v
				case error:
					msg = v.Error()
				}
				if !strings.HasPrefix(msg, "pool: ") && !strings.HasPrefix(msg, "breaker: ") {
					t.Errorf("%s panicked with %v, want the source's package message", what, v)
				}
			}()
			f()
		}()
	}
	b := breaker.New(breaker.Settings{})
	reg, err := bm.Observe(b)
	if err != nil {
		t.Fatalf("Observe after a panicking one = %v", err)
	}
	reg.Unregister()

	// The zero values that are ready to use are observed as they are.
	for what, f := range map[string]func() error{
		"zero Semaphore": func() error {
			_, err := ctxsyncotel.ObserveSemaphore("s", new(ctxsync.Semaphore), mp)
			return err
		},
		"zero Queue": func() error {
			_, err := ctxsyncotel.ObserveQueue("q", new(ctxsync.Queue[int]), mp)
			return err
		},
	} {
		func() {
			defer func() {
				if v := recover(); v != nil {
					msg, _ := v.(string)
					if !strings.HasPrefix(msg, "ctxsync: ") {
						t.Errorf("%s: panic %v, want none or the package's message", what, v)
					}
				}
			}()
			if err := f(); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}()
	}
}
