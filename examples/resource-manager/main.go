// Command resource-manager manages several kinds of resources (a database, a
// cache, a payment API) for a set of workers. Each kind has its own pool, with
// its own limit on concurrent use, health checks, and a circuit breaker on the
// making of new ones. A job that cannot get a resource is retried with
// retry.Do, which backs off and waits as long as an open breaker asks. The
// manager reports usage, waits and failures, and shuts down gracefully: it
// stops the workers, then waits for the resources in use to come back, for a
// bounded time.
//
// It exports its metrics to Prometheus with extra/ctxsyncprom: each pool's
// resources, waits and closings, each breaker's state and calls, with the
// histograms of the waits and the call durations. The program serves them
// on /metrics, on a port of the loopback interface, while it runs, and ends
// by reading its own /metrics as Prometheus would scrape it.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/retry"
)

func main() {
	reg := prometheus.NewRegistry()
	// Port 0: the system picks a free one. A real service would listen on a
	// port of its own, where Prometheus finds it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: metricsHandler(reg), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/metrics"
	fmt.Println("metrics on", url)

	run(os.Stdout, reg)

	// Read our own /metrics, as Prometheus would, and show a few lines:
	// how many Acquires waited, and what the payments breaker saw.
	resp, err := http.Get(url)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	fmt.Println("\nscraped from", url+":")
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		if line := sc.Text(); strings.HasPrefix(line, "ctxsync_pool_acquire_wait_seconds_count") ||
			strings.HasPrefix(line, `ctxsync_breaker_calls_total{name="payments"`) {
			fmt.Println(line)
		}
	}
}

// metricsHandler serves the metrics of reg on /metrics.
func metricsHandler(reg prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

// A resource is a client of some backend.
type resource struct {
	kind string
	id   int
}

// kind describes a kind of resource.
type kind struct {
	name    string
	maxSize int           // at most this many in use at once
	dial    time.Duration // how long it takes to make one
	downTil time.Duration // the backend refuses new connections until then
}

// manager holds a pool per kind.
type manager struct {
	tl       *timeline
	pools    map[string]*pool.Pool[*resource]
	breakers map[string]*breaker.Breaker
	failures map[string]int // guarded by mu: jobs that failed to get a resource
	mu       sync.Mutex
}

// newManager makes a pool and a breaker per kind, and exports their metrics
// through c, each under the kind's name.
func newManager(tl *timeline, start time.Time, kinds []kind, c *ctxsyncprom.Collector) *manager {
	m := &manager{tl: tl, pools: map[string]*pool.Pool[*resource]{}, breakers: map[string]*breaker.Breaker{}, failures: map[string]int{}}
	for _, k := range kinds {
		b := breaker.New(breaker.Settings{
			Name: k.name, FailureThreshold: 2, OpenTimeout: 200 * time.Millisecond,
			OnStateChange: func(from, to breaker.State, _ breaker.Counts) {
				tl.Printf("   %s breaker: %s -> %s", k.name, from, to)
			},
			// The histogram of the durations of the calls it lets
			// through: here, the calls to New. "" labels them with
			// the breaker's Name.
			OnCall: c.BreakerOnCall(""),
		})
		made := 0
		var madeMu sync.Mutex
		p, err := pool.New(pool.Config[*resource]{
			Name: k.name, // the hooks and AddPool read it
			New: func(ctx context.Context) (*resource, error) {
				time.Sleep(k.dial)
				if time.Since(start) < k.downTil {
					return nil, errors.New(k.name + " refuses connections")
				}
				madeMu.Lock()
				made++
				id := made
				madeMu.Unlock()
				return &resource{kind: k.name, id: id}, nil
			},
			Close:       func(*resource) error { return nil },
			HealthCheck: func(context.Context, *resource) error { return nil },
			MaxSize:     k.maxSize,
			Breaker:     b,
			// The histograms of the waits of Acquire and of the calls
			// to New.
			Hooks: c.PoolHooks(""),
		})
		if err != nil {
			panic(err)
		}
		// Each scrape reads the pool's Stats and the breaker's Metrics.
		if err := c.AddPool("", p); err != nil {
			panic(err)
		}
		if err := c.AddBreaker("", b); err != nil {
			panic(err)
		}
		m.pools[k.name], m.breakers[k.name] = p, b
	}
	return m
}

// use runs fn with a resource of kind.
func (m *manager) use(ctx context.Context, kindName string, fn func(*resource) error) error {
	err := m.pools[kindName].With(ctx, fn)
	if err != nil {
		m.mu.Lock()
		m.failures[kindName]++
		m.mu.Unlock()
	}
	return err
}

// shutdown closes every pool, waiting for resources in use to come back until
// ctx ends.
func (m *manager) shutdown(ctx context.Context) {
	var wg sync.WaitGroup
	for name, p := range m.pools {
		wg.Go(func() {
			if err := p.Close(ctx); err != nil {
				m.tl.Printf("   %s: %v", name, err)
			}
		})
	}
	wg.Wait()
}

func (m *manager) report(w io.Writer) {
	fmt.Fprintf(w, "%-9s %8s %8s %10s %9s %8s %8s\n", "kind", "acquires", "waited", "wait time", "failures", "created", "breaker")
	names := make([]string, 0, len(m.pools))
	for name := range m.pools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := m.pools[name].Stats()
		fmt.Fprintf(w, "%-9s %8d %8d %10v %9d %8d %8s\n", name, s.AcquireCount, s.WaitCount,
			s.WaitDuration.Round(time.Millisecond), m.failures[name], s.Created, m.breakers[name].State())
	}
}

// run plays the story, printing its timeline to w, and exports its metrics
// to reg.
func run(w io.Writer, reg prometheus.Registerer) {
	tl := newTimeline(w, time.Millisecond)
	start := time.Now()
	// Histogram buckets to the scale of the story: dials of a few
	// milliseconds, waits of up to a second. (The default has 16, from
	// 100µs to 10s.)
	buckets := []float64{.005, .025, .1, .5}
	metrics := ctxsyncprom.NewCollector(ctxsyncprom.Config{
		AcquireWaitBuckets:    buckets,
		CreateDurationBuckets: buckets,
		CallDurationBuckets:   buckets,
	})
	reg.MustRegister(metrics)
	m := newManager(tl, start, []kind{
		{name: "database", maxSize: 2, dial: 20 * time.Millisecond},
		{name: "cache", maxSize: 4, dial: 5 * time.Millisecond},
		{name: "payments", maxSize: 1, dial: 30 * time.Millisecond, downTil: 250 * time.Millisecond},
	}, metrics)
	// The workers' ctx: shutdown cancels it, so that no new job starts and
	// no retry waits on.
	work, stopWork := context.WithCancel(context.Background())
	defer stopWork()

	// Four workers, each with its own mix of jobs: (kind, how long it holds
	// the resource). Only worker 4 needs the payments API while it is down,
	// so that each step of the outage has one witness and the story plays
	// the same on every run: two workers that an open breaker sends away
	// come back at the same instant, and race for its one trial call.
	type job struct {
		kind string
		hold time.Duration
	}
	scripts := [][]job{
		{{"database", 50 * time.Millisecond}, {"cache", 3 * time.Millisecond}, {"database", 800 * time.Millisecond}},
		{{"database", 70 * time.Millisecond}, {"cache", 4 * time.Millisecond}, {"database", 250 * time.Millisecond}, {"payments", 20 * time.Millisecond}},
		{{"database", 90 * time.Millisecond}, {"cache", 7 * time.Millisecond}, {"database", 300 * time.Millisecond}, {"payments", 25 * time.Millisecond}},
		{{"cache", 6 * time.Millisecond}, {"payments", 35 * time.Millisecond}, {"database", 45 * time.Millisecond}},
	}
	var wg sync.WaitGroup
	for i, script := range scripts {
		// Each job gets a few attempts, waiting 25ms, 50ms, 100ms between
		// them, or longer when an open breaker says when to come back (its
		// error's RetryAfter). NoJitter keeps the story the same on every
		// run; a real fleet of workers wants the default jitter.
		policy := retry.Policy{
			MaxAttempts:  5,
			InitialDelay: 25 * time.Millisecond,
			Jitter:       retry.NoJitter,
			// A closed pool stays closed: no point in trying again.
			Retryable: func(err error) bool { return !errors.Is(err, pool.ErrClosed) },
			OnRetry: func(_ int, err error, delay time.Duration) {
				tl.Printf("worker %d: %v; again in %v", i+1, err, delay)
			},
		}
		wg.Go(func() {
			time.Sleep(time.Duration(i*13) * time.Millisecond)
			for _, j := range script {
				id, err := retry.Do(work, policy, func(ctx context.Context) (int, error) {
					id := 0
					err := m.use(ctx, j.kind, func(r *resource) error {
						id = r.id
						tl.Printf("worker %d uses %s %d", i+1, r.kind, r.id)
						time.Sleep(j.hold)
						return nil
					})
					return id, err
				})
				switch {
				case work.Err() != nil:
					tl.Printf("worker %d stops: shutting down", i+1)
					return
				case err != nil:
					tl.Printf("worker %d gives up on %s: %v", i+1, j.kind, err)
				case id == 0:
					panic("no resource")
				}
			}
		})
	}

	time.Sleep(700 * time.Millisecond)
	tl.Printf("shutdown: no new work; waiting up to 500ms for the resources in use")
	stopWork()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	m.shutdown(ctx)
	tl.Printf("shutdown: every pool is closed")
	wg.Wait()
	m.report(w)
}

// A timeline prints the story one line per event, stamped with the time since
// it began, rounded to unit. The example's test runs it in a testing/synctest
// bubble, where time is virtual and the stamps exact. It is safe for
// concurrent use.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	unit  time.Duration
}

func newTimeline(w io.Writer, unit time.Duration) *timeline {
	return &timeline{w: w, start: time.Now(), unit: unit}
}

// Printf prints one line, stamped.
func (t *timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Round(t.unit).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}
