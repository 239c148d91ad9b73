package ctxsyncotel_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestObserveNewerPrimitives: each Observe of the newer primitives reports
// what its source holds at a collection, with its name attribute, as the
// instrument kind and unit its doc says; Unregister stops it.
func TestObserveNewerPrimitives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		var (
			f  ctxsync.Flight[string, int]
			kl ctxsync.KeyedLock[string]
			wg ctxsync.WaitGroup
			w  = ctxsync.NewWatch("a")
			al = adaptive.New(adaptive.Config{})
		)
		var regs []interface{ Unregister() error }
		for _, mk := range []func() (interface{ Unregister() error }, error){
			func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveFlight("f", &f, mp) },
			func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveKeyedLock("k", &kl, mp) },
			func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveWaitGroup("wg", &wg, mp) },
			func() (interface{ Unregister() error }, error) { return ctxsyncotel.ObserveWatch("w", w, mp) },
			func() (interface{ Unregister() error }, error) {
				return ctxsyncotel.ObserveAdaptiveLimiter("a", al, mp)
			},
		} {
			reg, err := mk()
			if err != nil {
				t.Fatal(err)
			}
			regs = append(regs, reg)
		}

		release := make(chan struct{})
		go f.Do(context.Background(), "x", func(context.Context) (int, error) { <-release; return 1, nil })
		if err := kl.Lock(context.Background(), "acct"); err != nil {
			t.Fatal(err)
		}
		wg.Add(2)
		w.Store("b")
		w.Store("c")
		ticket, err := al.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()

		c := collect(t, r)
		c.checkKinds(t, map[string]struct {
			kind kind
			unit string
		}{
			"ctxsync.flight.calls":       {upDown, "{call}"},
			"ctxsync.keyedlock.keys":     {upDown, "{key}"},
			"ctxsync.waitgroup.count":    {upDown, "{task}"},
			"ctxsync.watch.version":      {counter, "{version}"},
			"ctxsync.adaptive.limit":     {upDown, "{call}"},
			"ctxsync.adaptive.in_flight": {upDown, "{call}"},
			"ctxsync.adaptive.waiting":   {upDown, "{call}"},
			"ctxsync.adaptive.shed":      {counter, "{call}"},
		})
		for _, p := range []struct {
			metric, key, name string
			want              int64
		}{
			{"ctxsync.flight.calls", "ctxsync.flight.name", "f", 1},
			{"ctxsync.keyedlock.keys", "ctxsync.keyedlock.name", "k", 1},
			{"ctxsync.waitgroup.count", "ctxsync.waitgroup.name", "wg", 2},
			{"ctxsync.watch.version", "ctxsync.watch.name", "w", 3},
			{"ctxsync.adaptive.in_flight", "ctxsync.adaptive.name", "a", 1},
			{"ctxsync.adaptive.waiting", "ctxsync.adaptive.name", "a", 0},
			{"ctxsync.adaptive.shed", "ctxsync.adaptive.name", "a", 0},
			{"ctxsync.adaptive.limit", "ctxsync.adaptive.name", "a", int64(al.Limit())},
		} {
			if got := c.point(t, p.metric, attrString(p.key, p.name)); got != p.want {
				t.Errorf("%s{%s} = %d, want %d", p.metric, p.name, got, p.want)
			}
		}
		if _, ok := c["ctxsync.adaptive.latency"]; !ok {
			t.Error("no ctxsync.adaptive.latency")
		}

		close(release)
		kl.Unlock("acct")
		wg.Add(-2)
		ticket.Ignore()
		synctest.Wait()
		for _, reg := range regs {
			if err := reg.Unregister(); err != nil {
				t.Fatal(err)
			}
		}
		if c := collect(t, r); len(c) != 0 {
			t.Errorf("after Unregister: %d metrics collected, want none", len(c))
		}
	})
}

// TestObserveNewerPrimitivesMisuse: an empty name or a nil source fails.
func TestObserveNewerPrimitivesMisuse(t *testing.T) {
	_, mp := newProvider(t)
	var f ctxsync.Flight[string, int]
	if _, err := ctxsyncotel.ObserveFlight("", &f, mp); err == nil {
		t.Error("ObserveFlight with an empty name: no error")
	}
	var nilWG *ctxsync.WaitGroup
	if _, err := ctxsyncotel.ObserveWaitGroup("wg", nilWG, mp); err == nil {
		t.Error("ObserveWaitGroup of a nil WaitGroup: no error")
	}
	if _, err := ctxsyncotel.ObserveWatch("w", nil, mp); err == nil {
		t.Error("ObserveWatch of nil: no error")
	}
}
