package ctxsyncprom_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestNewGaugeMetrics reads the Flight, KeyedLock, WaitGroup, Watch and
// adaptive Limiter metrics at two scrapes, so that values are read at the
// scrape and not at Add, then removes them.
func TestNewGaugeMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		ctx := context.Background()

		var f ctxsync.Flight[string, int]
		var kl ctxsync.KeyedLock[string]
		var wg ctxsync.WaitGroup
		w := ctxsync.NewWatch(0)
		l := adaptive.New(adaptive.Config{})
		for _, err := range []error{
			c.AddFlight("lookups", &f),
			c.AddKeyedLock("rows", &kl),
			c.AddWaitGroup("tasks", &wg),
			c.AddWatch("config", w),
			c.AddAdaptiveLimiter("api", l),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		names := []string{"flight_calls", "keyedlock_keys", "waitgroup_tasks", "watch_version_total",
			"adaptive_limit", "adaptive_in_flight", "adaptive_waiting", "adaptive_shed_total", "adaptive_latency_seconds"}
		compare(t, reg, newGaugeWant(0, 0, 0, 1, l.Limit(), 0), append([]string(nil), names...)...)

		release := make(chan struct{})
		var done sync.WaitGroup
		done.Go(func() {
			_, _, _ = f.Do(ctx, "a", func(context.Context) (int, error) { <-release; return 1, nil })
		})
		if err := kl.Lock(ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		wg.Add(2)
		w.Store(5)
		w.Store(6)
		tk, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		compare(t, reg, newGaugeWant(1, 1, 2, 3, l.Limit(), 1), append([]string(nil), names...)...)

		close(release)
		done.Wait()
		kl.Unlock("r1")
		wg.Done()
		wg.Done()
		tk.Done(nil)
		for _, n := range []string{"lookups", "rows", "tasks", "config", "api"} {
			if !c.Remove(n) {
				t.Errorf("Remove(%q) = false", n)
			}
		}
		if n := testutilCount(t, c); n != 0 {
			t.Errorf("%d series after Remove, want 0", n)
		}
	})
}

func newGaugeWant(calls, keys, count int, version uint64, limit, inFlight int) string {
	r := strings.NewReplacer(
		"CALLS", itoa(calls), "KEYS", itoa(keys), "COUNT", itoa(count),
		"VERSION", itoa(int(version)), "LIMIT", itoa(limit), "INFLIGHT", itoa(inFlight))
	return r.Replace(`
# HELP ctxsync_adaptive_in_flight Calls admitted and not yet done.
# TYPE ctxsync_adaptive_in_flight gauge
ctxsync_adaptive_in_flight{name="api"} INFLIGHT
# HELP ctxsync_adaptive_latency_seconds The baseline latency the limiter estimates: the service's latency when nothing queues; 0 before its first window.
# TYPE ctxsync_adaptive_latency_seconds gauge
ctxsync_adaptive_latency_seconds{name="api"} 0
# HELP ctxsync_adaptive_limit Calls the adaptive limiter lets run at once now, as its algorithm sets it.
# TYPE ctxsync_adaptive_limit gauge
ctxsync_adaptive_limit{name="api"} LIMIT
# HELP ctxsync_adaptive_shed_total Calls shed with ErrShed.
# TYPE ctxsync_adaptive_shed_total counter
ctxsync_adaptive_shed_total{name="api"} 0
# HELP ctxsync_adaptive_waiting Calls waiting now to be admitted.
# TYPE ctxsync_adaptive_waiting gauge
ctxsync_adaptive_waiting{name="api"} 0
# HELP ctxsync_flight_calls Calls in flight now: keys with a call under way.
# TYPE ctxsync_flight_calls gauge
ctxsync_flight_calls{name="lookups"} CALLS
# HELP ctxsync_keyedlock_keys Keys held or waited for now.
# TYPE ctxsync_keyedlock_keys gauge
ctxsync_keyedlock_keys{name="rows"} KEYS
# HELP ctxsync_waitgroup_tasks The counter of the WaitGroup now: tasks added and not yet done.
# TYPE ctxsync_waitgroup_tasks gauge
ctxsync_waitgroup_tasks{name="tasks"} COUNT
# HELP ctxsync_watch_version_total The version of the watched value: 1 when made, one more at each Store.
# TYPE ctxsync_watch_version_total counter
ctxsync_watch_version_total{name="config"} VERSION
`)
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestNewGaugesLint: the linter finds nothing to say of the new metrics,
// in the families nor in the scrape, as TestLint checks the others.
func TestNewGaugesLint(t *testing.T) {
	c, reg := newTestCollector(t)
	var f ctxsync.Flight[string, int]
	var kl ctxsync.KeyedLock[string]
	var wg ctxsync.WaitGroup
	_ = c.AddFlight("f", &f)
	_ = c.AddKeyedLock("k", &kl)
	_ = c.AddWaitGroup("w", &wg)
	_ = c.AddWatch("v", ctxsync.NewWatch(""))
	_ = c.AddAdaptiveLimiter("a", adaptive.New(adaptive.Config{}))
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	problems, scrape := lintScrape(t, reg)
	for _, p := range problems {
		t.Errorf("lint of the scrape: %s: %s", p.Metric, p.Text)
	}
	if len(problems) > 0 {
		t.Logf("the scrape:\n%s", scrape)
	}
}

func TestNewGaugesMisuse(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	var f ctxsync.Flight[string, int]
	for _, tc := range []struct {
		name string
		fn   func()
		want []string
	}{
		{"nil flight", func() { _ = c.AddFlight("f", (*ctxsync.Flight[string, int])(nil)) }, []string{"AddFlight", "nil"}},
		{"flight no name", func() { _ = c.AddFlight("", &f) }, []string{"AddFlight", "empty name"}},
		{"nil keyedlock", func() { _ = c.AddKeyedLock("k", nil) }, []string{"AddKeyedLock", "nil"}},
		{"keyedlock no name", func() { _ = c.AddKeyedLock("", &ctxsync.KeyedLock[int]{}) }, []string{"AddKeyedLock", "empty name"}},
		{"nil waitgroup", func() { _ = c.AddWaitGroup("w", (*ctxsync.WaitGroup)(nil)) }, []string{"AddWaitGroup", "nil"}},
		{"waitgroup no name", func() { _ = c.AddWaitGroup("", &ctxsync.WaitGroup{}) }, []string{"AddWaitGroup", "empty name"}},
		{"nil watch", func() { _ = c.AddWatch("v", (*ctxsync.Watch[int])(nil)) }, []string{"AddWatch", "nil"}},
		{"watch no name", func() { _ = c.AddWatch("", ctxsync.NewWatch(1)) }, []string{"AddWatch", "empty name"}},
		{"nil limiter", func() { _ = c.AddAdaptiveLimiter("a", (*adaptive.Limiter)(nil)) }, []string{"AddAdaptiveLimiter", "nil"}},
		{"limiter no name", func() { _ = c.AddAdaptiveLimiter("", adaptive.New(adaptive.Config{})) }, []string{"AddAdaptiveLimiter", "empty name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if !strings.HasPrefix(msg, "ctxsyncprom: ") {
					t.Fatalf("panic %v, want one beginning ctxsyncprom: ", r)
				}
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("panic %q does not say %q", msg, w)
					}
				}
			}()
			tc.fn()
		})
	}
}

func TestNewGaugesDuplicateNames(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	adds := []func() error{
		func() error { return c.AddFlight("x", &ctxsync.Flight[int, int]{}) },
		func() error { return c.AddKeyedLock("x", &ctxsync.KeyedLock[int]{}) },
		func() error { return c.AddWaitGroup("x", &ctxsync.WaitGroup{}) },
		func() error { return c.AddWatch("x", ctxsync.NewWatch(0)) },
		func() error { return c.AddAdaptiveLimiter("x", adaptive.New(adaptive.Config{})) },
	}
	// Each kind may use the name once, whatever the others did.
	for i, add := range adds {
		if err := add(); err != nil {
			t.Errorf("first add %d = %v", i, err)
		}
	}
	for i, add := range adds {
		if err := add(); !errors.Is(err, ctxsyncprom.ErrDuplicateName) {
			t.Errorf("second add %d = %v, want %v", i, err, ctxsyncprom.ErrDuplicateName)
		}
	}
}
