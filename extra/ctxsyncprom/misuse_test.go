package ctxsyncprom_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/prometheus/client_golang/prometheus"
)

// mustPanic runs f and checks that it panics with a message that starts
// with the package's name and holds each of want.
func mustPanic(t *testing.T, f func(), want ...string) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one with %q", want)
		}
		msg := fmt.Sprint(r)
		if !strings.HasPrefix(msg, "ctxsyncprom: ") {
			t.Errorf("panic %q does not start with %q", msg, "ctxsyncprom: ")
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("panic %q does not say %q", msg, w)
			}
		}
	}()
	f()
}

// TestBadConfigPanics: NewCollector panics on a bad Config, and Validate
// returns the same complaint as an error (nil for a good Config).
func TestBadConfigPanics(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ctxsyncprom.Config
		want string
	}{
		{"namespace with a dash", ctxsyncprom.Config{Namespace: "my-app"}, `"my-app"`},
		{"namespace starting with a digit", ctxsyncprom.Config{Namespace: "1app"}, "Namespace"},
		{"namespace with a space", ctxsyncprom.Config{Namespace: "my app"}, "Namespace"},
		// Colons are for recording rules: promtool and promlint flag them.
		{"namespace with a colon", ctxsyncprom.Config{Namespace: "app:x"}, "colon"},
		{"empty buckets", ctxsyncprom.Config{AcquireWaitBuckets: []float64{}}, "AcquireWaitBuckets"},
		{"decreasing buckets", ctxsyncprom.Config{CallDurationBuckets: []float64{1, 0.5}}, "CallDurationBuckets"},
		{"equal buckets", ctxsyncprom.Config{CreateDurationBuckets: []float64{1, 1}}, "CreateDurationBuckets"},
		{"NaN bucket", ctxsyncprom.Config{LimiterWaitBuckets: []float64{0.1, math.NaN()}}, "LimiterWaitBuckets"},
		{"lone NaN bucket", ctxsyncprom.Config{AcquireWaitBuckets: []float64{math.NaN()}}, "AcquireWaitBuckets"},
		{"NaN bucket first", ctxsyncprom.Config{CreateDurationBuckets: []float64{math.NaN(), 1}}, "CreateDurationBuckets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustPanic(t, func() { ctxsyncprom.NewCollector(tc.opts) }, tc.want)
			err := tc.opts.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "ctxsyncprom: ") {
				t.Fatalf("Validate() = %v, want an error naming the package and %q", err, tc.want)
			}
		})
	}
}

// TestOptionsBucketsAreCopied: a caller changing its bucket slice after
// NewCollector changes nothing.
func TestGoodConfigValidates(t *testing.T) {
	for _, cfg := range []ctxsyncprom.Config{
		{},
		{Namespace: "app_x", AcquireWaitBuckets: []float64{0.1, 1}},
		{LimiterWaitBuckets: []float64{math.Inf(-1), 0, math.Inf(1)}},
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", cfg, err)
		}
	}
}

func TestOptionsBucketsAreCopied(t *testing.T) {
	b := []float64{0.1, 1}
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{AcquireWaitBuckets: b, Namespace: "app_x"})
	b[0] = 5
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	c.PoolHooks("db").OnAcquire(pool.AcquireEvent{Waited: true, Wait: 1})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "app_x_pool_acquire_wait_seconds" {
			if got := mf.Metric[0].Histogram.Bucket[0].GetUpperBound(); got != 0.1 {
				t.Errorf("first bucket = %v, want 0.1", got)
			}
			return
		}
	}
	t.Error("no app_x_pool_acquire_wait_seconds in the scrape")
}

func TestBadSourcesPanic(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	for _, tc := range []struct {
		name string
		f    func()
		want []string
	}{
		{"nil pool", func() { _ = c.AddPool("db", nil) }, []string{"AddPool", "nil"}},
		{"nil *pool.Pool", func() { _ = c.AddPool("db", (*pool.Pool[int])(nil)) }, []string{"AddPool", "*pool.Pool[int]"}},
		{"pool with no name", func() { _ = c.AddPool("", statsFunc(func() pool.Stats { return pool.Stats{} })) }, []string{"AddPool", "empty name", "Config.Name"}},
		{"pool's own name not UTF-8", func() { _ = c.AddPool("", statsFunc(func() pool.Stats { return pool.Stats{Name: "\xff"} })) }, []string{"AddPool", "UTF-8"}},
		{"hooks told of a pool with no name", func() { c.PoolHooks("").OnAcquire(pool.AcquireEvent{}) }, []string{`PoolHooks("")`, "Config.Name"}},
		{"hooks told of New of a pool with no name", func() { c.PoolHooks("").OnCreate(pool.CreateEvent{}) }, []string{`PoolHooks("")`, "Config.Name"}},
		{"hooks told of a name not UTF-8", func() { c.PoolHooks("").OnAcquire(pool.AcquireEvent{Name: "\xff"}) }, []string{`PoolHooks("")`, "UTF-8"}},
		{"name not UTF-8", func() { c.PoolHooks("\xff") }, []string{"PoolHooks", "UTF-8"}},
		{"nil breaker", func() { _ = c.AddBreaker("b", (*breaker.Breaker)(nil)) }, []string{"AddBreaker", "nil"}},
		{"breaker with no name", func() { _ = c.AddBreaker("", breaker.New(breaker.Settings{})) }, []string{"AddBreaker", "empty name", "Settings.Name"}},
		{"OnCall told of a breaker with no name", func() { c.BreakerOnCall("")(breaker.CallEvent{Outcome: breaker.Success}) }, []string{`BreakerOnCall("")`, "Settings.Name"}},
		{"OnCall told of a refusal by a breaker with no name", func() { c.BreakerOnCall("")(breaker.CallEvent{Outcome: breaker.Rejected}) }, []string{`BreakerOnCall("")`, "Settings.Name"}},
		{"OnCall told of a name not UTF-8", func() { c.BreakerOnCall("")(breaker.CallEvent{Name: "\xff"}) }, []string{`BreakerOnCall("")`, "UTF-8"}},
		{"OnCall name not UTF-8", func() { c.BreakerOnCall("\xff") }, []string{"BreakerOnCall", "UTF-8"}},
		{"nil tally", func() { _ = c.AddTally("t", (*ratelimit.Tally)(nil)) }, []string{"AddTally", "nil"}},
		{"OnWait with no name", func() { c.TallyOnWait("") }, []string{"TallyOnWait"}},
		{"nil semaphore", func() { _ = c.AddSemaphore("s", (*ctxsync.Semaphore)(nil)) }, []string{"AddSemaphore", "nil"}},
		{"nil weighted", func() { _ = c.AddWeighted("w", nil) }, []string{"AddWeighted", "nil"}},
		{"nil queue", func() { _ = c.AddQueue("q", (*ctxsync.Queue[int])(nil)) }, []string{"AddQueue", "nil"}},
		{"nil waiter", func() { _ = c.AddWaiter("w", (*ctxsync.Barrier)(nil)) }, []string{"AddWaiter", "nil"}},
		{"waiter with no name", func() { _ = c.AddWaiter("", ctxsync.NewBarrier(2, nil)) }, []string{"AddWaiter", "empty name"}},
	} {
		t.Run(tc.name, func(t *testing.T) { mustPanic(t, tc.f, tc.want...) })
	}
}

// TestUnreadableSourcePanicsAtAdd: a source that panics when read (a zero
// pool or breaker) panics at Add, in the caller's goroutine, with its own
// message, not at a scrape in the registry's goroutine, which would end the
// program. Nothing is added.
func TestUnreadableSourcePanicsAtAdd(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"zero pool.Pool", func() { _ = c.AddPool("db", new(pool.Pool[int])) }, "pool: use New"},
		{"zero breaker.Breaker", func() { _ = c.AddBreaker("b", new(breaker.Breaker)) }, "breaker: use New"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := fmt.Sprint(recover()); !strings.HasPrefix(r, tc.want) {
					t.Errorf("panic %q, want one starting with %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
	if n := testutilCount(t, c); n != 0 {
		t.Errorf("%d series after the failed Adds, want 0", n)
	}
}

func TestZeroCollectorPanics(t *testing.T) {
	var zero ctxsyncprom.Collector
	var nilc *ctxsyncprom.Collector
	for _, c := range []*ctxsyncprom.Collector{&zero, nilc} {
		for name, f := range map[string]func(){
			"Describe":  func() { c.Describe(make(chan *prometheus.Desc, 100)) },
			"Collect":   func() { c.Collect(make(chan prometheus.Metric, 100)) },
			"AddPool":   func() { _ = c.AddPool("p", statsFunc(nil)) },
			"PoolHooks": func() { c.PoolHooks("p") },
			"Remove":    func() { c.Remove("p") },
		} {
			t.Run(name, func(t *testing.T) { mustPanic(t, f, "NewCollector") })
		}
	}
}

// statsFunc is a Pool made of a function.
type statsFunc func() pool.Stats

func (f statsFunc) Stats() pool.Stats { return f() }

func TestDuplicateNames(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	stats := statsFunc(func() pool.Stats { return pool.Stats{} })
	if err := c.AddPool("db", stats); err != nil {
		t.Fatal(err)
	}
	err := c.AddPool("db", stats)
	if !errors.Is(err, ctxsyncprom.ErrDuplicateName) {
		t.Fatalf("second AddPool = %v, want %v", err, ctxsyncprom.ErrDuplicateName)
	}
	if !strings.HasPrefix(err.Error(), "ctxsyncprom: ") || !strings.Contains(err.Error(), `pool named "db"`) {
		t.Errorf("error %q does not say what was added twice", err)
	}
	// Another kind may share the name.
	if err := c.AddBreaker("db", breaker.New(breaker.Settings{})); err != nil {
		t.Errorf("AddBreaker with a pool's name = %v, want nil", err)
	}
	// A Semaphore and a Weighted give the same series: one name for both.
	if err := c.AddSemaphore("mem", ctxsync.NewSemaphore(1)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddWeighted("mem", ctxsync.NewWeighted(1)); !errors.Is(err, ctxsyncprom.ErrDuplicateName) {
		t.Errorf("AddWeighted with a semaphore's name = %v, want %v", err, ctxsyncprom.ErrDuplicateName)
	}
	for _, err := range []error{
		c.AddBreaker("db", breaker.New(breaker.Settings{})),
		c.AddTally("t", &ratelimit.Tally{}),
		c.AddTally("t", &ratelimit.Tally{}),
		c.AddQueue("q", ctxsync.NewQueue[int](0)),
		c.AddQueue("q", ctxsync.NewQueue[int](0)),
		c.AddWaiter("w", ctxsync.NewBarrier(2, nil)),
		c.AddWaiter("w", ctxsync.NewBarrier(2, nil)),
	} {
		if err != nil && !errors.Is(err, ctxsyncprom.ErrDuplicateName) {
			t.Errorf("error %v, want nil or %v", err, ctxsyncprom.ErrDuplicateName)
		}
	}
	if got := testutilCount(t, c); got == 0 {
		t.Error("no series")
	}
}

// TestRegisterTwice: the same Collector in one registry twice is refused by
// the registry, as any collector is.
func TestRegisterTwice(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(c); !errors.As(err, &are) {
		t.Errorf("second Register = %v, want an AlreadyRegisteredError", err)
	}
	// Two Collectors of one namespace collide too; another namespace does not.
	if err := reg.Register(ctxsyncprom.NewCollector(ctxsyncprom.Config{})); err == nil {
		t.Error("Register of a second Collector of the same namespace = nil, want an error")
	}
	if err := reg.Register(ctxsyncprom.NewCollector(ctxsyncprom.Config{Namespace: "other"})); err != nil {
		t.Errorf("Register of a Collector of another namespace = %v", err)
	}
}
