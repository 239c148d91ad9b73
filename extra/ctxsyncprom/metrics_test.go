package ctxsyncprom_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testBuckets keep the expected histograms short.
var testBuckets = []float64{.001, .005, .01, .05}

func newTestCollector(t *testing.T) (*ctxsyncprom.Collector, *prometheus.Registry) {
	t.Helper()
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{
		AcquireWaitBuckets:    testBuckets,
		CreateDurationBuckets: testBuckets,
		CallDurationBuckets:   testBuckets,
		LimiterWaitBuckets:    testBuckets,
	})
	// A pedantic registry checks that every sample matches a description
	// that Describe sent.
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("Register: %v", err)
	}
	return c, reg
}

// compare compares the scrape of reg, for the metrics named (without the
// namespace), with want.
func compare(t *testing.T, reg prometheus.Gatherer, want string, names ...string) {
	t.Helper()
	for i, n := range names {
		names[i] = "ctxsync_" + n
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

// TestPoolMetrics drives a pool through a known sequence, in virtual time,
// and reads its metrics and histograms.
func TestPoolMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		n := 0
		p, err := pool.New(pool.Config[int]{
			New: func(context.Context) (int, error) {
				time.Sleep(10 * time.Millisecond)
				n++
				return n, nil
			},
			Close:   func(int) error { return nil },
			MaxSize: 2,
			Hooks:   c.PoolHooks("db"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddPool("db", p); err != nil {
			t.Fatalf("AddPool: %v", err)
		}
		ctx := context.Background()
		r1, err := p.Acquire(ctx) // makes one: waits 10ms
		if err != nil {
			t.Fatal(err)
		}
		r2, err := p.Acquire(ctx) // makes one: waits 10ms
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *pool.Resource[int])
		go func() {
			r, err := p.Acquire(ctx) // full: waits 5ms for r1
			if err != nil {
				t.Error(err)
			}
			got <- r
		}()
		time.Sleep(5 * time.Millisecond)
		r1.Release()
		r3 := <-got
		short, cancel := context.WithTimeout(ctx, 3*time.Millisecond)
		if _, err := p.Acquire(short); !errors.Is(err, context.DeadlineExceeded) { // full: gives up after 3ms
			t.Errorf("Acquire = %v, want %v", err, context.DeadlineExceeded)
		}
		cancel()
		r2.Destroy()

		compare(t, reg, poolWant1, poolMetrics...)

		r3.Release()
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
		compare(t, reg, poolWant2, "pool_resources", "pool_closed_total")
	})
}

var poolMetrics = []string{
	"pool_resources", "pool_max_resources", "pool_waiters", "pool_acquires_total",
	"pool_empty_acquires_total", "pool_canceled_acquires_total", "pool_waits_total",
	"pool_wait_duration_seconds_total", "pool_created_total", "pool_create_failures_total",
	"pool_closed_total", "pool_close_errors_total", "pool_acquire_wait_seconds",
	"pool_create_duration_seconds",
}

const poolWant1 = `
# HELP ctxsync_pool_acquire_wait_seconds Time Acquires waited for a resource, when they found none idle (from PoolHooks).
# TYPE ctxsync_pool_acquire_wait_seconds histogram
ctxsync_pool_acquire_wait_seconds_bucket{name="db",le="0.001"} 0
ctxsync_pool_acquire_wait_seconds_bucket{name="db",le="0.005"} 2
ctxsync_pool_acquire_wait_seconds_bucket{name="db",le="0.01"} 4
ctxsync_pool_acquire_wait_seconds_bucket{name="db",le="0.05"} 4
ctxsync_pool_acquire_wait_seconds_bucket{name="db",le="+Inf"} 4
ctxsync_pool_acquire_wait_seconds_sum{name="db"} 0.028
ctxsync_pool_acquire_wait_seconds_count{name="db"} 4
# HELP ctxsync_pool_acquires_total Acquires and TryAcquires that returned a resource.
# TYPE ctxsync_pool_acquires_total counter
ctxsync_pool_acquires_total{name="db"} 3
# HELP ctxsync_pool_canceled_acquires_total Acquires that ended with their context while under way.
# TYPE ctxsync_pool_canceled_acquires_total counter
ctxsync_pool_canceled_acquires_total{name="db"} 1
# HELP ctxsync_pool_close_errors_total Calls to the pool's Close function that returned an error.
# TYPE ctxsync_pool_close_errors_total counter
ctxsync_pool_close_errors_total{name="db"} 0
# HELP ctxsync_pool_closed_total Resources closed, by reason: idle (MaxIdleTime), lifetime (MaxLifetime), health (failed HealthCheck), destroy (Destroy), pool (Close).
# TYPE ctxsync_pool_closed_total counter
ctxsync_pool_closed_total{name="db",reason="destroy"} 1
ctxsync_pool_closed_total{name="db",reason="health"} 0
ctxsync_pool_closed_total{name="db",reason="idle"} 0
ctxsync_pool_closed_total{name="db",reason="lifetime"} 0
ctxsync_pool_closed_total{name="db",reason="pool"} 0
# HELP ctxsync_pool_create_duration_seconds Time the calls to the pool's New took, failed ones included (from PoolHooks).
# TYPE ctxsync_pool_create_duration_seconds histogram
ctxsync_pool_create_duration_seconds_bucket{name="db",le="0.001"} 0
ctxsync_pool_create_duration_seconds_bucket{name="db",le="0.005"} 0
ctxsync_pool_create_duration_seconds_bucket{name="db",le="0.01"} 2
ctxsync_pool_create_duration_seconds_bucket{name="db",le="0.05"} 2
ctxsync_pool_create_duration_seconds_bucket{name="db",le="+Inf"} 2
ctxsync_pool_create_duration_seconds_sum{name="db"} 0.02
ctxsync_pool_create_duration_seconds_count{name="db"} 2
# HELP ctxsync_pool_create_failures_total Calls to New that failed, or that the pool's breaker refused.
# TYPE ctxsync_pool_create_failures_total counter
ctxsync_pool_create_failures_total{name="db"} 0
# HELP ctxsync_pool_created_total Resources made by New.
# TYPE ctxsync_pool_created_total counter
ctxsync_pool_created_total{name="db"} 2
# HELP ctxsync_pool_empty_acquires_total Acquires that found no idle resource.
# TYPE ctxsync_pool_empty_acquires_total counter
ctxsync_pool_empty_acquires_total{name="db"} 4
# HELP ctxsync_pool_max_resources The most resources the pool may hold (Config.MaxSize).
# TYPE ctxsync_pool_max_resources gauge
ctxsync_pool_max_resources{name="db"} 2
# HELP ctxsync_pool_resources Resources of the pool now, by state: idle, in_use, constructing (calls to New under way), closing (calls to Close under way).
# TYPE ctxsync_pool_resources gauge
ctxsync_pool_resources{name="db",state="closing"} 0
ctxsync_pool_resources{name="db",state="constructing"} 0
ctxsync_pool_resources{name="db",state="idle"} 0
ctxsync_pool_resources{name="db",state="in_use"} 1
# HELP ctxsync_pool_wait_duration_seconds_total Time the Acquires counted in waits_total waited, in all.
# TYPE ctxsync_pool_wait_duration_seconds_total counter
ctxsync_pool_wait_duration_seconds_total{name="db"} 0.028
# HELP ctxsync_pool_waiters Acquires waiting now for a release or a new resource.
# TYPE ctxsync_pool_waiters gauge
ctxsync_pool_waiters{name="db"} 0
# HELP ctxsync_pool_waits_total Acquires that waited, for a release or a new resource.
# TYPE ctxsync_pool_waits_total counter
ctxsync_pool_waits_total{name="db"} 4
`

const poolWant2 = `
# HELP ctxsync_pool_closed_total Resources closed, by reason: idle (MaxIdleTime), lifetime (MaxLifetime), health (failed HealthCheck), destroy (Destroy), pool (Close).
# TYPE ctxsync_pool_closed_total counter
ctxsync_pool_closed_total{name="db",reason="destroy"} 1
ctxsync_pool_closed_total{name="db",reason="health"} 0
ctxsync_pool_closed_total{name="db",reason="idle"} 0
ctxsync_pool_closed_total{name="db",reason="lifetime"} 0
ctxsync_pool_closed_total{name="db",reason="pool"} 1
# HELP ctxsync_pool_resources Resources of the pool now, by state: idle, in_use, constructing (calls to New under way), closing (calls to Close under way).
# TYPE ctxsync_pool_resources gauge
ctxsync_pool_resources{name="db",state="closing"} 0
ctxsync_pool_resources{name="db",state="constructing"} 0
ctxsync_pool_resources{name="db",state="idle"} 0
ctxsync_pool_resources{name="db",state="in_use"} 0
`

var errDown = errors.New("down")

// TestBreakerMetrics drives a breaker to open and on to half-open, in
// virtual time, and reads its metrics and the histogram of its calls.
func TestBreakerMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		b := breaker.New(breaker.Settings{
			Name:             "api",
			FailureThreshold: 2,
			OpenTimeout:      time.Second,
			IsIgnored:        func(err error) bool { return errors.Is(err, context.Canceled) },
			OnCall:           c.BreakerOnCall("api"),
		})
		if err := c.AddBreaker("api", b); err != nil {
			t.Fatalf("AddBreaker: %v", err)
		}
		ctx := context.Background()
		call := func(d time.Duration, err error) error {
			return b.Execute(ctx, func(context.Context) error {
				time.Sleep(d)
				return err
			})
		}
		_ = call(2*time.Millisecond, nil)
		_ = call(20*time.Millisecond, context.Canceled)
		_ = call(30*time.Millisecond, errDown)
		_ = call(time.Millisecond, errDown) // opens it
		for range 3 {
			if err := call(time.Millisecond, nil); !errors.Is(err, breaker.ErrOpen) {
				t.Fatalf("Execute = %v, want %v", err, breaker.ErrOpen)
			}
		}
		compare(t, reg, breakerWant1, breakerMetrics...)

		time.Sleep(time.Second) // the scrape finds it half-open
		compare(t, reg, breakerWant2, "breaker_state")
	})
}

var breakerMetrics = []string{
	"breaker_state", "breaker_disabled", "breaker_calls_total", "breaker_slow_calls_total",
	"breaker_consecutive_openings", "breaker_window_calls", "breaker_window_failure_ratio",
	"breaker_window_slow_call_ratio", "breaker_call_duration_seconds",
}

const breakerWant1 = `
# HELP ctxsync_breaker_call_duration_seconds Time the calls let through by the breaker took, by outcome (from BreakerOnCall).
# TYPE ctxsync_breaker_call_duration_seconds histogram
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="failure",le="0.001"} 1
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="failure",le="0.005"} 1
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="failure",le="0.01"} 1
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="failure",le="0.05"} 2
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="failure",le="+Inf"} 2
ctxsync_breaker_call_duration_seconds_sum{name="api",outcome="failure"} 0.031
ctxsync_breaker_call_duration_seconds_count{name="api",outcome="failure"} 2
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="ignored",le="0.001"} 0
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="ignored",le="0.005"} 0
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="ignored",le="0.01"} 0
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="ignored",le="0.05"} 1
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="ignored",le="+Inf"} 1
ctxsync_breaker_call_duration_seconds_sum{name="api",outcome="ignored"} 0.02
ctxsync_breaker_call_duration_seconds_count{name="api",outcome="ignored"} 1
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="success",le="0.001"} 0
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="success",le="0.005"} 1
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="success",le="0.01"} 1
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="success",le="0.05"} 1
ctxsync_breaker_call_duration_seconds_bucket{name="api",outcome="success",le="+Inf"} 1
ctxsync_breaker_call_duration_seconds_sum{name="api",outcome="success"} 0.002
ctxsync_breaker_call_duration_seconds_count{name="api",outcome="success"} 1
# HELP ctxsync_breaker_calls_total Calls by outcome: success, failure, ignored (let through, their error not judged), rejected (refused by the breaker). Reset on Breaker.Reset.
# TYPE ctxsync_breaker_calls_total counter
ctxsync_breaker_calls_total{name="api",outcome="failure"} 2
ctxsync_breaker_calls_total{name="api",outcome="ignored"} 1
ctxsync_breaker_calls_total{name="api",outcome="rejected"} 3
ctxsync_breaker_calls_total{name="api",outcome="success"} 1
# HELP ctxsync_breaker_consecutive_openings Openings since the breaker last closed, which OpenBackoff scales the open time by.
# TYPE ctxsync_breaker_consecutive_openings gauge
ctxsync_breaker_consecutive_openings{name="api"} 1
# HELP ctxsync_breaker_disabled 1 if the breaker is disabled: it lets every call through.
# TYPE ctxsync_breaker_disabled gauge
ctxsync_breaker_disabled{name="api"} 0
# HELP ctxsync_breaker_slow_calls_total Calls slower than SlowCallDuration, whatever their outcome. Reset on Breaker.Reset.
# TYPE ctxsync_breaker_slow_calls_total counter
ctxsync_breaker_slow_calls_total{name="api"} 0
# HELP ctxsync_breaker_state 1 for the state the breaker is in (closed, half-open or open), 0 for the others.
# TYPE ctxsync_breaker_state gauge
ctxsync_breaker_state{name="api",state="closed"} 0
ctxsync_breaker_state{name="api",state="half-open"} 0
ctxsync_breaker_state{name="api",state="open"} 1
`

const breakerWant2 = `
# HELP ctxsync_breaker_state 1 for the state the breaker is in (closed, half-open or open), 0 for the others.
# TYPE ctxsync_breaker_state gauge
ctxsync_breaker_state{name="api",state="closed"} 0
ctxsync_breaker_state{name="api",state="half-open"} 1
ctxsync_breaker_state{name="api",state="open"} 0
`

// TestBreakerWindowMetrics reads the window of a breaker with a rate rule.
func TestBreakerWindowMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		b := breaker.New(breaker.Settings{
			FailureRateThreshold:  60,
			SlowCallDuration:      10 * time.Millisecond,
			SlowCallRateThreshold: 90,
			MinimumCalls:          100,
			WindowDuration:        time.Minute,
		})
		if err := c.AddBreaker("api", b); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			var err error
			if i < 2 {
				err = errDown
			}
			_ = b.Execute(context.Background(), func(context.Context) error {
				time.Sleep(time.Duration(i) * 10 * time.Millisecond)
				return err
			})
		}
		b.Disable()
		compare(t, reg, breakerWindowWant, "breaker_window_calls", "breaker_window_failure_ratio",
			"breaker_window_slow_call_ratio", "breaker_disabled", "breaker_slow_calls_total")
	})
}

const breakerWindowWant = `
# HELP ctxsync_breaker_disabled 1 if the breaker is disabled: it lets every call through.
# TYPE ctxsync_breaker_disabled gauge
ctxsync_breaker_disabled{name="api"} 1
# HELP ctxsync_breaker_slow_calls_total Calls slower than SlowCallDuration, whatever their outcome. Reset on Breaker.Reset.
# TYPE ctxsync_breaker_slow_calls_total counter
ctxsync_breaker_slow_calls_total{name="api"} 2
# HELP ctxsync_breaker_window_calls Calls in the window of the rate rules; only with a rate rule.
# TYPE ctxsync_breaker_window_calls gauge
ctxsync_breaker_window_calls{name="api"} 4
# HELP ctxsync_breaker_window_failure_ratio Failed calls in the window of the rate rules, as a fraction of its calls; only with a rate rule.
# TYPE ctxsync_breaker_window_failure_ratio gauge
ctxsync_breaker_window_failure_ratio{name="api"} 0.5
# HELP ctxsync_breaker_window_slow_call_ratio Slow calls in the window of the rate rules, as a fraction of its calls; only with a rate rule.
# TYPE ctxsync_breaker_window_slow_call_ratio gauge
ctxsync_breaker_window_slow_call_ratio{name="api"} 0.5
`

// TestTallyMetrics counts a token bucket's decisions and waits, in virtual
// time.
func TestTallyMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		tally := &ratelimit.Tally{OnWait: c.TallyOnWait("search")}
		if err := c.AddTally("search", tally); err != nil {
			t.Fatalf("AddTally: %v", err)
		}
		l := tally.Wrap(ratelimit.NewTokenBucket(100, 2)) // one token each 10ms
		for range 3 {
			l.AllowN(1) // allowed, allowed, refused
		}
		ctx := context.Background()
		if err := l.WaitN(ctx, 1); err != nil { // waits 10ms
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 3*time.Millisecond)
		defer cancel()
		if err := l.WaitN(short, 1); err == nil { // cannot be served in time
			t.Fatal("WaitN = nil, want an error")
		}
		compare(t, reg, tallyWant, "ratelimit_decisions_total", "ratelimit_waits_total", "ratelimit_wait_seconds")
	})
}

const tallyWant = `
# HELP ctxsync_ratelimit_decisions_total AllowN, Take and TakeContext calls through the Tally, by decision: allowed or refused.
# TYPE ctxsync_ratelimit_decisions_total counter
ctxsync_ratelimit_decisions_total{decision="allowed",name="search"} 2
ctxsync_ratelimit_decisions_total{decision="refused",name="search"} 1
# HELP ctxsync_ratelimit_wait_seconds Time WaitN calls and Transport requests through the Tally took, by result (from TallyOnWait).
# TYPE ctxsync_ratelimit_wait_seconds histogram
ctxsync_ratelimit_wait_seconds_bucket{name="search",result="failed",le="0.001"} 1
ctxsync_ratelimit_wait_seconds_bucket{name="search",result="failed",le="0.005"} 1
ctxsync_ratelimit_wait_seconds_bucket{name="search",result="failed",le="0.01"} 1
ctxsync_ratelimit_wait_seconds_bucket{name="search",result="failed",le="0.05"} 1
ctxsync_ratelimit_wait_seconds_bucket{name="search",result="failed",le="+Inf"} 1
ctxsync_ratelimit_wait_seconds_sum{name="search",result="failed"} 0
ctxsync_ratelimit_wait_seconds_count{name="search",result="failed"} 1
ctxsync_ratelimit_wait_seconds_bucket{name="search",result="taken",le="0.001"} 0
ctxsync_ratelimit_wait_seconds_bucket{name="search",result="taken",le="0.005"} 0
ctxsync_ratelimit_wait_seconds_bucket{name="search",result="taken",le="0.01"} 1
ctxsync_ratelimit_wait_seconds_bucket{name="search",result="taken",le="0.05"} 1
ctxsync_ratelimit_wait_seconds_bucket{name="search",result="taken",le="+Inf"} 1
ctxsync_ratelimit_wait_seconds_sum{name="search",result="taken"} 0.01
ctxsync_ratelimit_wait_seconds_count{name="search",result="taken"} 1
# HELP ctxsync_ratelimit_waits_total WaitN calls and Transport requests through the Tally, by result: taken (the events were taken) or failed (an error).
# TYPE ctxsync_ratelimit_waits_total counter
ctxsync_ratelimit_waits_total{name="search",result="failed"} 1
ctxsync_ratelimit_waits_total{name="search",result="taken"} 1
`

// plainQueue is a Queue that tells neither its capacity nor its waiters.
type plainQueue struct{ n int }

func (q plainQueue) Len() int        { return q.n }
func (q plainQueue) Unfinished() int { return q.n }

// TestGaugeMetrics reads the gauges of semaphores, queues and waiters.
func TestGaugeMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		ctx := context.Background()

		sem := ctxsync.NewSemaphore(3)
		_ = sem.Acquire(ctx)
		w := ctxsync.NewWeighted(10)
		_ = w.Acquire(ctx, 4)
		waitCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { _ = w.Acquire(waitCtx, 8) })
		q := ctxsync.NewQueue[int](0)
		_ = q.Put(ctx, 1)
		_ = q.Put(ctx, 2)
		_, _ = q.Get(ctx)
		full := ctxsync.NewQueue[int](1)
		_ = full.Put(ctx, 1)
		wg.Go(func() { _ = full.Put(waitCtx, 2) })
		wg.Go(func() { _ = full.Put(waitCtx, 3) })
		empty := ctxsync.NewPriorityQueue[int](0)
		wg.Go(func() { _, _ = empty.Get(waitCtx) })
		pq := ctxsync.NewPriorityQueue[string](0)
		_ = pq.Put(ctx, 1, "a")
		barrier := ctxsync.NewBarrier(3, nil)
		wg.Go(func() { _, _ = barrier.Wait(waitCtx) })
		synctest.Wait()

		for _, err := range []error{
			c.AddSemaphore("workers", sem),
			c.AddWeighted("memory", w),
			c.AddQueue("jobs", q),
			c.AddQueue("full", full),
			c.AddQueue("empty", empty),
			c.AddQueue("plain", plainQueue{4}),
			c.AddQueue("ranked", pq),
			c.AddWaiter("phases", barrier),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		compare(t, reg, gaugeWant, "semaphore_available", "semaphore_capacity", "semaphore_waiters",
			"queue_items", "queue_unfinished_tasks", "queue_capacity", "queue_waiters", "waiters")
		cancel()
		wg.Wait()
	})
}

const gaugeWant = `
# HELP ctxsync_queue_capacity The most items the queue holds; 0 if unbounded.
# TYPE ctxsync_queue_capacity gauge
ctxsync_queue_capacity{name="empty"} 0
ctxsync_queue_capacity{name="full"} 1
ctxsync_queue_capacity{name="jobs"} 0
ctxsync_queue_capacity{name="ranked"} 0
# HELP ctxsync_queue_items Items in the queue now.
# TYPE ctxsync_queue_items gauge
ctxsync_queue_items{name="empty"} 0
ctxsync_queue_items{name="full"} 1
ctxsync_queue_items{name="jobs"} 1
ctxsync_queue_items{name="plain"} 4
ctxsync_queue_items{name="ranked"} 1
# HELP ctxsync_queue_unfinished_tasks Items put and not yet marked done with TaskDone.
# TYPE ctxsync_queue_unfinished_tasks gauge
ctxsync_queue_unfinished_tasks{name="empty"} 0
ctxsync_queue_unfinished_tasks{name="full"} 1
ctxsync_queue_unfinished_tasks{name="jobs"} 2
ctxsync_queue_unfinished_tasks{name="plain"} 4
ctxsync_queue_unfinished_tasks{name="ranked"} 1
# HELP ctxsync_queue_waiters Goroutines waiting now on the queue, by side: get (consumers starved of items), put (producers held back by a full queue).
# TYPE ctxsync_queue_waiters gauge
ctxsync_queue_waiters{name="empty",side="get"} 1
ctxsync_queue_waiters{name="empty",side="put"} 0
ctxsync_queue_waiters{name="full",side="get"} 0
ctxsync_queue_waiters{name="full",side="put"} 2
ctxsync_queue_waiters{name="jobs",side="get"} 0
ctxsync_queue_waiters{name="jobs",side="put"} 0
ctxsync_queue_waiters{name="ranked",side="get"} 0
ctxsync_queue_waiters{name="ranked",side="put"} 0
# HELP ctxsync_semaphore_available Permits (units, for a Weighted) free now.
# TYPE ctxsync_semaphore_available gauge
ctxsync_semaphore_available{name="memory"} 6
ctxsync_semaphore_available{name="workers"} 2
# HELP ctxsync_semaphore_capacity Units of a Weighted semaphore, free or held; only for Weighted.
# TYPE ctxsync_semaphore_capacity gauge
ctxsync_semaphore_capacity{name="memory"} 10
# HELP ctxsync_semaphore_waiters Goroutines waiting now to acquire.
# TYPE ctxsync_semaphore_waiters gauge
ctxsync_semaphore_waiters{name="memory"} 1
ctxsync_semaphore_waiters{name="workers"} 0
# HELP ctxsync_waiters Goroutines waiting now on the primitive (a lock, a barrier, a condition).
# TYPE ctxsync_waiters gauge
ctxsync_waiters{name="phases"} 1
`
