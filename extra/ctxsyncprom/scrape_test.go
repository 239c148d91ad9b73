package ctxsyncprom_test

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

func testutilCount(t *testing.T, c prometheus.Collector) int {
	t.Helper()
	return testutil.CollectAndCount(c)
}

// everything returns a Collector with a source of every kind, each hook fed
// once, and a cleanup.
func everything(t *testing.T) (*ctxsyncprom.Collector, func()) {
	t.Helper()
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	// The Acquire below may return before OnCreate is told of the call to
	// New made for it (see pool.Hooks): wait for it, so that two gathers
	// read the same counts.
	hooks := c.PoolHooks("db")
	created := make(chan struct{}, 1)
	onCreate := hooks.OnCreate
	hooks.OnCreate = func(e pool.CreateEvent) {
		onCreate(e)
		created <- struct{}{}
	}
	p, err := pool.New(pool.Config[int]{
		New:     func(context.Context) (int, error) { return 1, nil },
		MaxSize: 2,
		Hooks:   hooks,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	<-created
	r.Release()
	b := breaker.New(breaker.Settings{OnCall: c.BreakerOnCall("api"), FailureRateThreshold: 50})
	_ = b.Execute(context.Background(), func(context.Context) error { return nil })
	tally := &ratelimit.Tally{OnWait: c.TallyOnWait("search")}
	_ = tally.Wrap(ratelimit.NewTokenBucket(1000, 1)).WaitN(context.Background(), 1)
	for _, err := range []error{
		c.AddPool("db", p),
		c.AddBreaker("api", b),
		c.AddTally("search", tally),
		c.AddSemaphore("workers", ctxsync.NewSemaphore(2)),
		c.AddWeighted("memory", ctxsync.NewWeighted(10)),
		c.AddQueue("jobs", ctxsync.NewQueue[int](0)),
		c.AddWaiter("phases", ctxsync.NewBarrier(2, nil)),
		c.AddFlight("lookups", &ctxsync.Flight[string, int]{}),
		c.AddKeyedLock("rows", &ctxsync.KeyedLock[string]{}),
		c.AddWaitGroup("tasks", &ctxsync.WaitGroup{}),
		c.AddWatch("config", ctxsync.NewWatch(0)),
		c.AddAdaptiveLimiter("api", adaptive.New(adaptive.Config{})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return c, func() { _ = p.Close(context.Background()) }
}

// TestLint: client_golang's linter finds nothing to say of any metric,
// neither in the Collector's families (testutil.CollectAndLint) nor in a
// scrape of them read back from the text a Prometheus server reads, which
// is what `promtool check metrics` checks (lintScrape): the scrape of a
// pedantic registry, and that of the Collector's own Gather.
func TestLint(t *testing.T) {
	c, done := everything(t)
	defer done()
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	for _, g := range []struct {
		name string
		g    prometheus.Gatherer
	}{{"registry", reg}, {"Collector.Gather", c}} {
		problems, scrape := lintScrape(t, g.g)
		for _, p := range problems {
			t.Errorf("lint of the %s scrape: %s: %s", g.name, p.Metric, p.Text)
		}
		if len(problems) > 0 {
			t.Logf("the %s scrape:\n%s", g.name, scrape)
		}
	}
}

// TestLintFindsBadMetrics: the checks of TestLint are not vacuous: each
// path reports every metric of a registry made to break the linter's rules.
// A metric with no help is seen only in the scrape, where it has an empty
// HELP line that the parser reads as no help at all; its family carries an
// empty help string, which the linter takes for one. So TestLint lints the
// scrape, as promtool does, besides the families.
func TestLintFindsBadMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(
		prometheus.NewCounter(prometheus.CounterOpts{Name: "ctxsync_bad_calls", Help: "A counter without _total."}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "ctxsync_badDepth", Help: "camelCase."}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "ctxsync_bad_wait_ms", Help: "An abbreviated unit, not the base one."}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "ctxsync_bad_depth_gauge", Help: "The type in the name."}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "ctxsync_bad_no_help"}),
	)
	bad := []string{"ctxsync_bad_calls", "ctxsync_badDepth", "ctxsync_bad_wait_ms", "ctxsync_bad_depth_gauge"}
	fromFamilies, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	fromScrape, scrape := lintScrape(t, reg)
	for _, path := range []struct {
		name     string
		problems []promlint.Problem
		bad      []string
	}{
		{"GatherAndLint", fromFamilies, bad},
		{"lintScrape", fromScrape, append(bad, "ctxsync_bad_no_help")},
	} {
		named := map[string]bool{}
		for _, p := range path.problems {
			named[p.Metric] = true
		}
		for _, m := range path.bad {
			if !named[m] {
				t.Errorf("%s found nothing to say of %s; it said %v", path.name, m, path.problems)
			}
		}
	}
	if t.Failed() {
		t.Logf("the scrape:\n%s", scrape)
	}
}

// lintScrape checks a scrape of g as `promtool check metrics` checks one,
// in the test's process: promtool runs client_golang's linter on the text
// it reads, so the families are written in the text format a Prometheus
// server reads, parsed back, and linted. The round trip is part of the
// check: a family the encoder writes in a way the parser refuses fails the
// test. It returns the linter's problems and the scrape.
func lintScrape(t *testing.T, g prometheus.Gatherer) ([]promlint.Problem, string) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	scrape := text.String()
	problems, err := promlint.New(&text).Lint()
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, scrape)
	}
	return problems, scrape
}

// TestScrapeMatchesDocTable: a scrape of a source of every kind, with every
// hook fed, gives exactly the metrics of the package doc's table, each with
// the type the table says; every sample has a description that Describe
// sent (the pedantic registry checks).
func TestScrapeMatchesDocTable(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^//\t(ctxsync_\w+)\s+(gauge|counter|histogram)\s`).FindAllStringSubmatch(string(doc), -1) {
		want[m[1]] = m[2]
	}
	if len(want) < 30 {
		t.Fatalf("found %d metrics in doc.go's table; has its layout changed?", len(want))
	}
	c, done := everything(t)
	defer done()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, mf := range mfs {
		got[mf.GetName()] = strings.ToLower(mf.GetType().String())
	}
	for name, typ := range want {
		if got[name] != typ {
			t.Errorf("%s: the table says %s, the scrape has %q", name, typ, got[name])
		}
	}
	for name := range got {
		if want[name] == "" {
			t.Errorf("%s is in the scrape, not in the package doc's table", name)
		}
	}
}

func TestRemove(t *testing.T) {
	c, done := everything(t)
	defer done()
	before := testutil.CollectAndCount(c)
	if err := c.AddSemaphore("db", ctxsync.NewSemaphore(1)); err != nil {
		t.Fatal(err)
	}
	if !c.Remove("db") {
		t.Fatal(`Remove("db") = false, want true`)
	}
	// The pool's 19 series, its 2 histograms and the semaphore's 2 series.
	if got, want := testutil.CollectAndCount(c), before-19-2; got != want {
		t.Errorf("%d series after Remove, want %d", got, want)
	}
	for _, n := range []string{"ctxsync_pool_resources", "ctxsync_pool_acquire_wait_seconds", "ctxsync_semaphore_available"} {
		if strings.Contains(scrapeText(t, c, n), `name="db"`) {
			t.Errorf("%s still has db after Remove", n)
		}
	}
	if c.Remove("db") {
		t.Error(`second Remove("db") = true, want false`)
	}
	// Hooks made before Remove go on working, unseen.
	if !c.Remove("api") {
		t.Error(`Remove("api") = false, want true`)
	}
	if err := c.AddPool("db", statsFunc(func() pool.Stats { return pool.Stats{Max: 7} })); err != nil {
		t.Errorf("AddPool after Remove = %v", err)
	}
	if got := scrapeText(t, c, "ctxsync_pool_max_resources"); !strings.Contains(got, `ctxsync_pool_max_resources{name="db"} 7`) {
		t.Errorf("scrape after Remove and AddPool:\n%s", got)
	}
	if c.Remove("nothing") {
		t.Error(`Remove("nothing") = true`)
	}
}

// scrapeText returns the text exposition of c's metric named name.
func scrapeText(t *testing.T, c prometheus.Collector, name string) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if mf.GetName() == name {
			_, _ = expfmt.MetricFamilyToText(&b, mf)
		}
	}
	return b.String()
}

func TestJoinPoolHooks(t *testing.T) {
	var log []string
	rec := func(who string) pool.Hooks {
		return pool.Hooks{
			OnAcquire:         func(e pool.AcquireEvent) { log = append(log, who+" acquire "+e.Wait.String()) },
			OnCreate:          func(pool.CreateEvent) { log = append(log, who+" create") },
			OnRelease:         func() { log = append(log, who+" release") },
			OnClose:           func(r pool.CloseReason) { log = append(log, who+" close "+r.String()) },
			OnHealthCheckFail: func(err error) { log = append(log, who+" health "+err.Error()) },
		}
	}
	j := ctxsyncprom.JoinPoolHooks(rec("a"), pool.Hooks{}, rec("b"))
	j.OnAcquire(pool.AcquireEvent{Waited: true, Wait: time.Second})
	j.OnCreate(pool.CreateEvent{})
	j.OnRelease()
	j.OnClose(pool.ClosedIdle)
	j.OnHealthCheckFail(errDown)
	want := "a acquire 1s,b acquire 1s,a create,b create,a release,b release,a close idle,b close idle,a health down,b health down"
	if got := strings.Join(log, ","); got != want {
		t.Errorf("joined hooks ran\n%s\nwant\n%s", got, want)
	}

	// A hook that none sets stays nil, so that it costs the pool nothing.
	only := ctxsyncprom.JoinPoolHooks(pool.Hooks{}, pool.Hooks{OnRelease: func() {}})
	if only.OnAcquire != nil || only.OnCreate != nil || only.OnClose != nil || only.OnHealthCheckFail != nil || only.OnRelease == nil {
		t.Errorf("JoinPoolHooks of one OnRelease = %+v, want only OnRelease set", only)
	}
	none := ctxsyncprom.JoinPoolHooks(pool.Hooks{})
	if none.OnAcquire != nil || none.OnCreate != nil || none.OnClose != nil || none.OnHealthCheckFail != nil || none.OnRelease != nil {
		t.Errorf("JoinPoolHooks of no hook = %+v, want none set", none)
	}
}

func TestJoinOnCall(t *testing.T) {
	if ctxsyncprom.JoinOnCall() != nil || ctxsyncprom.JoinOnCall(nil, nil) != nil {
		t.Error("JoinOnCall of no func is not nil")
	}
	var got []string
	f := ctxsyncprom.JoinOnCall(
		func(e breaker.CallEvent) { got = append(got, "a "+e.Outcome.String()) },
		nil,
		func(e breaker.CallEvent) { got = append(got, "b "+e.Outcome.String()) },
	)
	f(breaker.CallEvent{Outcome: breaker.Rejected})
	if s := strings.Join(got, ","); s != "a rejected,b rejected" {
		t.Errorf("joined OnCall ran %q", s)
	}
}

// TestPoolHooksOnlyObserveWaits: an Acquire that did not wait is not in the
// wait histogram; Remove forgets hooks' histograms too.
func TestPoolHooksOnlyObserveWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
		h := c.PoolHooks("db")
		h.OnAcquire(pool.AcquireEvent{})
		h.OnAcquire(pool.AcquireEvent{Err: context.Canceled})
		h.OnAcquire(pool.AcquireEvent{Waited: true, Wait: time.Millisecond, Err: context.Canceled})
		if got := scrapeText(t, c, "ctxsync_pool_acquire_wait_seconds"); !strings.Contains(got, `ctxsync_pool_acquire_wait_seconds_count{name="db"} 1`) {
			t.Errorf("histogram:\n%s\nwant a count of 1", got)
		}
		if !c.Remove("db") {
			t.Error(`Remove("db") of hooks alone = false`)
		}
		if got := testutil.CollectAndCount(c); got != 0 {
			t.Errorf("%d series after Remove, want 0", got)
		}
	})
}
