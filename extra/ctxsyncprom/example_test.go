package ctxsyncprom_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// printScrape prints the samples of g whose lines start with one of
// prefixes, as a scrape of /metrics would show them.
func printScrape(g prometheus.Gatherer, prefixes ...string) {
	mfs, err := g.Gather()
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			panic(err)
		}
	}
	for line := range strings.Lines(b.String()) {
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				fmt.Print(line)
				break
			}
		}
	}
}

// A pool exported with its histograms: the hooks go in its Config, the pool
// into the Collector once made. The name is the pool's, given once in its
// Config: the hooks read it from each event, AddPool from the pool's Stats.
func Example() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	// The pool tells OnCreate in the goroutine that made the resource,
	// which may be after the Acquire that asked for it has returned: the
	// example waits for it, so that its scrape shows the creation.
	created := make(chan struct{}, 1)
	p, err := pool.New(pool.Config[string]{
		Name:    "db",
		New:     func(context.Context) (string, error) { return "conn", nil },
		MaxSize: 4,
		Hooks: ctxsyncprom.JoinPoolHooks(c.PoolHooks(""), pool.Hooks{
			OnCreate: func(pool.CreateEvent) { created <- struct{}{} },
		}),
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())
	if err := c.AddPool("", p); err != nil {
		panic(err)
	}

	_ = p.With(context.Background(), func(string) error { return nil })
	<-created
	printScrape(reg, "ctxsync_pool_resources", "ctxsync_pool_acquires_total", "ctxsync_pool_create_duration_seconds_count")
	// Output:
	// ctxsync_pool_acquires_total{name="db"} 1
	// ctxsync_pool_create_duration_seconds_count{name="db"} 1
	// ctxsync_pool_resources{name="db",state="closing"} 0
	// ctxsync_pool_resources{name="db",state="constructing"} 0
	// ctxsync_pool_resources{name="db",state="idle"} 1
	// ctxsync_pool_resources{name="db",state="in_use"} 0
}

// A Config changes the namespace and the buckets of a histogram.
func ExampleNewCollector() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{
		Namespace:          "shop",
		AcquireWaitBuckets: []float64{.001, .01, .1, 1},
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	c.PoolHooks("db").OnAcquire(pool.AcquireEvent{Waited: true, Wait: 5 * time.Millisecond})
	printScrape(reg, "shop_pool_acquire_wait_seconds_bucket")
	// Output:
	// shop_pool_acquire_wait_seconds_bucket{name="db",le="0.001"} 0
	// shop_pool_acquire_wait_seconds_bucket{name="db",le="0.01"} 1
	// shop_pool_acquire_wait_seconds_bucket{name="db",le="0.1"} 1
	// shop_pool_acquire_wait_seconds_bucket{name="db",le="1"} 1
	// shop_pool_acquire_wait_seconds_bucket{name="db",le="+Inf"} 1
}

// A Collector serves many sources, each under its name.
func ExampleCollector() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	for _, name := range []string{"orders", "users"} {
		p, err := pool.New(pool.Config[int]{Name: name, New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 8})
		if err != nil {
			panic(err)
		}
		defer p.Close(context.Background())
		if err := c.AddPool("", p); err != nil {
			panic(err)
		}
	}
	printScrape(reg, "ctxsync_pool_max_resources")
	// Output:
	// ctxsync_pool_max_resources{name="orders"} 8
	// ctxsync_pool_max_resources{name="users"} 8
}

// AddPool reads the pool's Stats at each scrape.
func ExampleCollector_AddPool() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	p, err := pool.New(pool.Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 2})
	if err != nil {
		panic(err)
	}
	if err := c.AddPool("db", p); err != nil {
		panic(err)
	}
	r, _ := p.Acquire(context.Background())
	r.Destroy()
	_ = p.Close(context.Background())
	printScrape(reg, "ctxsync_pool_created_total", "ctxsync_pool_closed_total")

	err = c.AddPool("db", p)
	fmt.Println(errors.Is(err, ctxsyncprom.ErrDuplicateName), err)
	// Output:
	// ctxsync_pool_closed_total{name="db",reason="destroy"} 1
	// ctxsync_pool_closed_total{name="db",reason="health"} 0
	// ctxsync_pool_closed_total{name="db",reason="idle"} 0
	// ctxsync_pool_closed_total{name="db",reason="lifetime"} 0
	// ctxsync_pool_closed_total{name="db",reason="pool"} 0
	// ctxsync_pool_created_total{name="db"} 1
	// true ctxsyncprom: name already added: a pool named "db"
}

// PoolHooks feed the histograms of a pool's waits and calls to New. Made
// with no name, they label each observation with the pool's Config.Name.
func ExampleCollector_PoolHooks() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	// OnCreate is told in the goroutine that made the resource, maybe after
	// the Acquire returned: wait for it, so that the scrape shows it.
	created := make(chan struct{}, 1)
	p, err := pool.New(pool.Config[int]{
		Name:    "db",
		New:     func(context.Context) (int, error) { return 1, nil },
		MaxSize: 1,
		Hooks: ctxsyncprom.JoinPoolHooks(c.PoolHooks(""), pool.Hooks{
			OnCreate: func(pool.CreateEvent) { created <- struct{}{} },
		}),
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())
	r, _ := p.Acquire(context.Background()) // waits for New
	r.Release()
	<-created
	r, _ = p.Acquire(context.Background()) // takes the idle one: no wait
	r.Release()
	printScrape(reg, "ctxsync_pool_acquire_wait_seconds_count", "ctxsync_pool_create_duration_seconds_count")
	// Output:
	// ctxsync_pool_acquire_wait_seconds_count{name="db"} 1
	// ctxsync_pool_create_duration_seconds_count{name="db"} 1
}

// JoinPoolHooks sets the Collector's hooks beside hooks of your own.
func ExampleJoinPoolHooks() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	mine := pool.Hooks{OnClose: func(r pool.CloseReason) { fmt.Println("closed:", r) }}
	p, err := pool.New(pool.Config[int]{
		New:     func(context.Context) (int, error) { return 1, nil },
		MaxSize: 1,
		Hooks:   ctxsyncprom.JoinPoolHooks(c.PoolHooks("db"), mine),
	})
	if err != nil {
		panic(err)
	}
	r, _ := p.Acquire(context.Background())
	r.Destroy()
	// Output:
	// closed: destroy
}

// AddBreaker reads the breaker's Metrics at each scrape. An empty name
// means the breaker's own, Settings.Name.
func ExampleCollector_AddBreaker() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b := breaker.New(breaker.Settings{Name: "payments", FailureThreshold: 1})
	if err := c.AddBreaker("", b); err != nil {
		panic(err)
	}
	fail := func(context.Context) error { return errors.New("timeout") }
	_ = b.Execute(context.Background(), fail) // opens it
	_ = b.Execute(context.Background(), fail) // refused
	printScrape(reg, "ctxsync_breaker_state", "ctxsync_breaker_calls_total")
	// Output:
	// ctxsync_breaker_calls_total{name="payments",outcome="failure"} 1
	// ctxsync_breaker_calls_total{name="payments",outcome="ignored"} 0
	// ctxsync_breaker_calls_total{name="payments",outcome="rejected"} 1
	// ctxsync_breaker_calls_total{name="payments",outcome="success"} 0
	// ctxsync_breaker_state{name="payments",state="closed"} 0
	// ctxsync_breaker_state{name="payments",state="half-open"} 0
	// ctxsync_breaker_state{name="payments",state="open"} 1
}

// BreakerOnCall feeds the histogram of the durations of a breaker's calls.
// Made with no name, it labels each call with the breaker's Settings.Name.
func ExampleCollector_BreakerOnCall() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b := breaker.New(breaker.Settings{Name: "payments", OnCall: c.BreakerOnCall("")})
	_ = b.Execute(context.Background(), func(context.Context) error { return nil })
	printScrape(reg, "ctxsync_breaker_call_duration_seconds_count")
	// Output:
	// ctxsync_breaker_call_duration_seconds_count{name="payments",outcome="failure"} 0
	// ctxsync_breaker_call_duration_seconds_count{name="payments",outcome="ignored"} 0
	// ctxsync_breaker_call_duration_seconds_count{name="payments",outcome="success"} 1
}

// JoinOnCall sets the Collector's OnCall beside one of your own.
func ExampleJoinOnCall() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	b := breaker.New(breaker.Settings{
		OnCall: ctxsyncprom.JoinOnCall(c.BreakerOnCall("payments"), func(e breaker.CallEvent) {
			fmt.Println("call:", e.Outcome)
		}),
	})
	_ = b.Execute(context.Background(), func(context.Context) error { return nil })
	// Output:
	// call: success
}

// AddTally reads the counts of a Tally, which counts the decisions of the
// limiters it wraps; TallyOnWait feeds the histogram of their waits.
func ExampleCollector_AddTally() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	tally := &ratelimit.Tally{OnWait: c.TallyOnWait("search")}
	if err := c.AddTally("search", tally); err != nil {
		panic(err)
	}
	l := tally.Wrap(ratelimit.NewTokenBucket(1, 2))
	for range 3 {
		l.AllowN(1)
	}
	printScrape(reg, "ctxsync_ratelimit_decisions_total")
	// Output:
	// ctxsync_ratelimit_decisions_total{decision="allowed",name="search"} 2
	// ctxsync_ratelimit_decisions_total{decision="refused",name="search"} 1
}

// TallyOnWait feeds the histogram of the waits of a Tally's limiters.
func ExampleCollector_TallyOnWait() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	tally := &ratelimit.Tally{OnWait: c.TallyOnWait("search")}
	l := tally.Wrap(ratelimit.NewTokenBucket(1, 1))
	_ = l.WaitN(context.Background(), 1) // a token is there
	_ = l.WaitN(context.Background(), 2) // more than the burst: fails at once
	printScrape(reg, "ctxsync_ratelimit_wait_seconds_count")
	// Output:
	// ctxsync_ratelimit_wait_seconds_count{name="search",result="failed"} 1
	// ctxsync_ratelimit_wait_seconds_count{name="search",result="taken"} 1
}

func ExampleCollector_AddSemaphore() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	sem := ctxsync.NewSemaphore(4)
	if err := c.AddSemaphore("workers", sem); err != nil {
		panic(err)
	}
	_ = sem.Acquire(context.Background())
	printScrape(reg, "ctxsync_semaphore_")
	// Output:
	// ctxsync_semaphore_available{name="workers"} 3
	// ctxsync_semaphore_waiters{name="workers"} 0
}

func ExampleCollector_AddWeighted() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mem := ctxsync.NewWeighted(1 << 20)
	if err := c.AddWeighted("memory", mem); err != nil {
		panic(err)
	}
	_ = mem.Acquire(context.Background(), 1<<18)
	printScrape(reg, "ctxsync_semaphore_")
	// Output:
	// ctxsync_semaphore_available{name="memory"} 786432
	// ctxsync_semaphore_capacity{name="memory"} 1.048576e+06
	// ctxsync_semaphore_waiters{name="memory"} 0
}

func ExampleCollector_AddQueue() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	q := ctxsync.NewQueue[string](0)
	if err := c.AddQueue("jobs", q); err != nil {
		panic(err)
	}
	_ = q.Put(context.Background(), "a")
	_ = q.Put(context.Background(), "b")
	_, _ = q.Get(context.Background())
	printScrape(reg, "ctxsync_queue_")
	// Output:
	// ctxsync_queue_capacity{name="jobs"} 0
	// ctxsync_queue_items{name="jobs"} 1
	// ctxsync_queue_unfinished_tasks{name="jobs"} 2
	// ctxsync_queue_waiters{name="jobs",side="get"} 0
	// ctxsync_queue_waiters{name="jobs",side="put"} 0
}

func ExampleCollector_AddWaiter() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if err := c.AddWaiter("phases", ctxsync.NewBarrier(3, nil)); err != nil {
		panic(err)
	}
	printScrape(reg, "ctxsync_waiters")
	// Output:
	// ctxsync_waiters{name="phases"} 0
}

// Remove forgets a name: a pool closed for good, say.
func ExampleCollector_Remove() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	_ = c.AddSemaphore("a", ctxsync.NewSemaphore(1))
	_ = c.AddSemaphore("b", ctxsync.NewSemaphore(2))
	fmt.Println(c.Remove("a"), c.Remove("a"))
	printScrape(reg, "ctxsync_semaphore_available")
	// Output:
	// true false
	// ctxsync_semaphore_available{name="b"} 2
}

func ExampleDefaultBuckets() {
	fmt.Println(ctxsyncprom.DefaultBuckets())
	// Output:
	// [0.0001 0.00025 0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10]
}

// Config{} is the default: the namespace ctxsync, DefaultBuckets for every
// histogram.
func ExampleConfig() {
	reg := prometheus.NewRegistry()
	reg.MustRegister(ctxsyncprom.NewCollector(ctxsyncprom.Config{Namespace: "billing"}))
	reg.MustRegister(ctxsyncprom.NewCollector(ctxsyncprom.Config{})) // beside it: another namespace
	fmt.Println("two collectors registered")
	// Output:
	// two collectors registered
}

// Every *pool.Pool[T] is a Pool, whatever its T; so is any type with Stats.
func ExamplePool() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	conns, _ := pool.New(pool.Config[[]byte]{New: func(context.Context) ([]byte, error) { return nil, nil }, MaxSize: 3})
	defer conns.Close(context.Background())
	var pools = map[string]ctxsyncprom.Pool{"buffers": conns, "fake": fixedStats{Max: 9}}
	for name, p := range pools {
		_ = c.AddPool(name, p)
	}
	printScrape(reg, "ctxsync_pool_max_resources")
	// Output:
	// ctxsync_pool_max_resources{name="buffers"} 3
	// ctxsync_pool_max_resources{name="fake"} 9
}

// fixedStats is a Pool whose Stats never change.
type fixedStats pool.Stats

func (s fixedStats) Stats() pool.Stats { return pool.Stats(s) }

// A *breaker.Breaker is a Breaker.
func ExampleBreaker() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var b ctxsyncprom.Breaker = breaker.New(breaker.Settings{})
	_ = c.AddBreaker("api", b)
	printScrape(reg, "ctxsync_breaker_state")
	// Output:
	// ctxsync_breaker_state{name="api",state="closed"} 1
	// ctxsync_breaker_state{name="api",state="half-open"} 0
	// ctxsync_breaker_state{name="api",state="open"} 0
}

// A *ratelimit.Tally is a Tally; one Tally may count the limiters of many
// keys (those of a Keyed, say) under one name.
func ExampleTally() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	tally := &ratelimit.Tally{}
	_ = c.AddTally("per-user", tally)
	for range 2 {
		tally.Wrap(ratelimit.NewTokenBucket(1, 1)).AllowN(1) // a limiter per user, one name
	}
	printScrape(reg, "ctxsync_ratelimit_decisions_total")
	// Output:
	// ctxsync_ratelimit_decisions_total{decision="allowed",name="per-user"} 2
	// ctxsync_ratelimit_decisions_total{decision="refused",name="per-user"} 0
}

// A *ctxsync.BoundedSemaphore is a Semaphore too.
func ExampleSemaphore() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	_ = c.AddSemaphore("uploads", ctxsync.NewBoundedSemaphore(2))
	printScrape(reg, "ctxsync_semaphore_available")
	// Output:
	// ctxsync_semaphore_available{name="uploads"} 2
}

// A *ctxsync.Weighted is a Weighted; Resize shows in its capacity.
func ExampleWeighted() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	w := ctxsync.NewWeighted(8)
	_ = c.AddWeighted("cpu", w)
	w.Resize(16)
	printScrape(reg, "ctxsync_semaphore_capacity")
	// Output:
	// ctxsync_semaphore_capacity{name="cpu"} 16
}

// A *ctxsync.PriorityQueue is a Queue too.
func ExampleQueue() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	q := ctxsync.NewPriorityQueue[string](0)
	_ = c.AddQueue("dispatch", q)
	_ = q.Put(context.Background(), 1, "urgent")
	printScrape(reg, "ctxsync_queue_items")
	// Output:
	// ctxsync_queue_items{name="dispatch"} 1
}

// A *ctxsync.Condition is a Waiter, as is every primitive with a Waiting
// method.
func ExampleWaiter() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var w ctxsyncprom.Waiter = ctxsync.NewCondition(nil)
	_ = c.AddWaiter("ready", w)
	printScrape(reg, "ctxsync_waiters")
	// Output:
	// ctxsync_waiters{name="ready"} 0
}

// A Collector gathers itself, without a registry: the fastest way to serve
// the metrics of many sources, here on a handler of their own.
func ExampleCollector_Gather() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	for _, name := range []string{"jobs", "mail"} {
		if err := c.AddSemaphore(name, ctxsync.NewSemaphore(4)); err != nil {
			panic(err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics/ctxsync", promhttp.HandlerFor(c, promhttp.HandlerOpts{}))
	printScrape(c, "ctxsync_semaphore_available")
	// Output:
	// ctxsync_semaphore_available{name="jobs"} 4
	// ctxsync_semaphore_available{name="mail"} 4
}

// Given to a breaker.Transport, BreakerOnCall("") labels the calls of each
// host's breaker with that breaker's name: the Transport's Settings.Name
// and the host.
func ExampleCollector_BreakerOnCall_transport() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	client := &http.Client{Transport: &breaker.Transport{
		Base:     okTransport{},
		Settings: breaker.Settings{Name: "api", OnCall: c.BreakerOnCall("")},
	}}
	for _, url := range []string{"http://a.example/", "http://b.example/", "http://b.example/"} {
		resp, err := client.Get(url)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	printScrape(reg, `ctxsync_breaker_call_duration_seconds_count{name="api a.example",outcome="success"}`,
		`ctxsync_breaker_call_duration_seconds_count{name="api b.example",outcome="success"}`)
	// Output:
	// ctxsync_breaker_call_duration_seconds_count{name="api a.example",outcome="success"} 1
	// ctxsync_breaker_call_duration_seconds_count{name="api b.example",outcome="success"} 2
}

func ExampleCollector_AddWatch() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	w := ctxsync.NewWatch("v1")
	if err := c.AddWatch("config", w); err != nil {
		panic(err)
	}
	w.Store("v2")
	printScrape(reg, "ctxsync_watch_version_total")
	// Output:
	// ctxsync_watch_version_total{name="config"} 2
}

func ExampleCollector_AddWaitGroup() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var wg ctxsync.WaitGroup
	if err := c.AddWaitGroup("tasks", &wg); err != nil {
		panic(err)
	}
	wg.Add(3)
	printScrape(reg, "ctxsync_waitgroup_tasks")
	wg.Add(-3)
	// Output:
	// ctxsync_waitgroup_tasks{name="tasks"} 3
}

func ExampleCollector_AddFlight() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var f ctxsync.Flight[string, int]
	if err := c.AddFlight("lookups", &f); err != nil {
		panic(err)
	}
	printScrape(reg, "ctxsync_flight_calls")
	// Output:
	// ctxsync_flight_calls{name="lookups"} 0
}

func ExampleCollector_AddKeyedLock() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	var k ctxsync.KeyedLock[string]
	if err := c.AddKeyedLock("rows", &k); err != nil {
		panic(err)
	}
	_ = k.Lock(context.Background(), "r1")
	printScrape(reg, "ctxsync_keyedlock_keys")
	k.Unlock("r1")
	// Output:
	// ctxsync_keyedlock_keys{name="rows"} 1
}

func ExampleCollector_AddAdaptiveLimiter() {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	l := adaptive.New(adaptive.Config{})
	if err := c.AddAdaptiveLimiter("api", l); err != nil {
		panic(err)
	}
	printScrape(reg, "ctxsync_adaptive_in_flight", "ctxsync_adaptive_shed_total")
	// Output:
	// ctxsync_adaptive_in_flight{name="api"} 0
	// ctxsync_adaptive_shed_total{name="api"} 0
}
