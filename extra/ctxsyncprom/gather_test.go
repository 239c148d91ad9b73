package ctxsyncprom_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
)

// text renders g's families in the text format.
func text(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestGatherMatchesRegistry: the Collector's own Gather gives, byte for
// byte, what a pedantic registry holding it gives; through
// prometheus.Gatherers too, whose checks it passes.
func TestGatherMatchesRegistry(t *testing.T) {
	c, cleanup := everything(t)
	defer cleanup()
	// More sources of one kind, added out of order, to check the sorting.
	for _, name := range []string{"zeta", "alpha", "mid"} {
		if err := c.AddQueue(name, ctxsync.NewQueue[int](3)); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want := text(t, reg)
	if got := text(t, c); got != want {
		t.Errorf("Gather:\n%s\nthe registry's:\n%s", got, want)
	}
	if got := text(t, prometheus.Gatherers{prometheus.NewRegistry(), c}); got != want {
		t.Errorf("through Gatherers:\n%s\nthe registry's:\n%s", got, want)
	}
}

// TestGatherEmpty: a Collector with no source gathers nothing, and one whose
// sources were removed gathers only what is left.
func TestGatherEmpty(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	if got := text(t, c); got != "" {
		t.Errorf("no source: %q", got)
	}
	if err := c.AddSemaphore("s", ctxsync.NewSemaphore(1)); err != nil {
		t.Fatal(err)
	}
	c.Remove("s")
	if got := text(t, c); got != "" {
		t.Errorf("removed: %q", got)
	}
	var zero *ctxsyncprom.Collector
	defer func() {
		if recover() == nil {
			t.Error("Gather of a nil Collector did not panic")
		}
	}()
	_, _ = zero.Gather()
}

// TestGatherConcurrent: Gather runs beside Adds, Removes and hooks (for the
// race detector), and each result is consistent by a registry's checks.
func TestGatherConcurrent(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := range 200 {
				name := "s" + strconv.Itoa(w) + "-" + strconv.Itoa(i%7)
				_ = c.AddSemaphore(name, ctxsync.NewSemaphore(2))
				hooks := c.PoolHooks(name)
				hooks.OnCreate(pool.CreateEvent{Duration: time.Millisecond})
				if i%3 == 0 {
					c.Remove(name)
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 100 {
				if _, err := (prometheus.Gatherers{c}).Gather(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
