package ctxsyncotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// show prints the data points of the metrics named, as an exporter would
// see them: sums and gauges by value, histograms by count.
func show(reader *sdkmetric.ManualReader, names ...string) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	add := func(name string, attrs attribute.Set, value string) {
		lines = append(lines, fmt.Sprintf("%s{%s} %s", name, attrs.Encoded(attribute.DefaultEncoder()), value))
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if !slices.Contains(names, m.Name) {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					add(m.Name, p.Attributes, fmt.Sprint(p.Value))
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					add(m.Name, p.Attributes, fmt.Sprint(p.Value))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					add(m.Name, p.Attributes, fmt.Sprintf("count=%d", p.Count))
				}
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
}

func ExampleNewPoolMetrics() {
	// A program would use its exporter's reader, and may leave the
	// provider out to use the global one.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	// No name here: the metrics take the pool's own, from its Config.
	m, err := ctxsyncotel.NewPoolMetrics("", ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	p, err := pool.New(pool.Config[[]byte]{
		Name:    "localhost:5432/app",
		New:     func(context.Context) ([]byte, error) { return make([]byte, 1024), nil },
		MaxSize: 4,
		// Hooks of one's own go in m.Hooks' argument: both are called.
		Hooks: m.Hooks(pool.Hooks{}),
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())
	reg, err := m.Observe(p)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	r, err := p.Acquire(context.Background())
	if err != nil {
		panic(err)
	}
	show(reader, "db.client.connection.count", "db.client.connection.wait_time")
	r.Release()
	// Output:
	// db.client.connection.count{db.client.connection.pool.name=localhost:5432/app,db.client.connection.state=idle} 0
	// db.client.connection.count{db.client.connection.pool.name=localhost:5432/app,db.client.connection.state=used} 1
	// db.client.connection.wait_time{db.client.connection.pool.name=localhost:5432/app} count=1
}

func ExampleNewBreakerMetrics() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	// No name here: the metrics take the breaker's own, from its Settings.
	m, err := ctxsyncotel.NewBreakerMetrics("", ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	b := breaker.New(breaker.Settings{
		Name:             "payments",
		FailureThreshold: 1,
		// Functions of one's own go in the arguments: both are called.
		OnCall:        m.OnCall(nil),
		OnStateChange: m.OnStateChange(nil),
	})
	reg, err := m.Observe(b)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	_ = b.Execute(context.Background(), func(context.Context) error { return errors.New("down") })
	_ = b.Execute(context.Background(), func(context.Context) error { return nil }) // refused
	show(reader, "ctxsync.breaker.calls", "ctxsync.breaker.state", "ctxsync.breaker.state_changes")
	// Output:
	// ctxsync.breaker.calls{ctxsync.breaker.name=payments,ctxsync.breaker.outcome=failure} 1
	// ctxsync.breaker.calls{ctxsync.breaker.name=payments,ctxsync.breaker.outcome=ignored} 0
	// ctxsync.breaker.calls{ctxsync.breaker.name=payments,ctxsync.breaker.outcome=rejected} 1
	// ctxsync.breaker.calls{ctxsync.breaker.name=payments,ctxsync.breaker.outcome=success} 0
	// ctxsync.breaker.state_changes{ctxsync.breaker.name=payments,ctxsync.breaker.state=open} 1
	// ctxsync.breaker.state{ctxsync.breaker.name=payments,ctxsync.breaker.state=closed} 0
	// ctxsync.breaker.state{ctxsync.breaker.name=payments,ctxsync.breaker.state=half-open} 0
	// ctxsync.breaker.state{ctxsync.breaker.name=payments,ctxsync.breaker.state=open} 1
}

func ExampleNewLimiterMetrics() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	m, err := ctxsyncotel.NewLimiterMetrics("api", ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	// One Tally may count for many limiters: the per-key ones of a Keyed,
	// say.
	tally := &ratelimit.Tally{OnWait: m.OnWait(nil)}
	limiter := tally.Wrap(ratelimit.NewTokenBucket(100, 2))
	reg, err := m.Observe(tally)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	for range 3 {
		limiter.AllowN(1)
	}
	show(reader, "ctxsync.ratelimit.decisions")
	// Output:
	// ctxsync.ratelimit.decisions{ctxsync.ratelimit.decision=allowed,ctxsync.ratelimit.name=api} 2
	// ctxsync.ratelimit.decisions{ctxsync.ratelimit.decision=refused,ctxsync.ratelimit.name=api} 1
}

func ExampleObserveSemaphore() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	sem := ctxsync.NewSemaphore(3)
	reg, err := ctxsyncotel.ObserveSemaphore("uploads", sem, ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	sem.TryAcquire()
	show(reader, "ctxsync.semaphore.available", "ctxsync.semaphore.waiting")
	// Output:
	// ctxsync.semaphore.available{ctxsync.semaphore.name=uploads} 2
	// ctxsync.semaphore.waiting{ctxsync.semaphore.name=uploads} 0
}

func ExampleObserveWeighted() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	mem := ctxsync.NewWeighted(64 << 20) // bytes of memory for requests
	reg, err := ctxsyncotel.ObserveWeighted("memory", mem, ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	mem.TryAcquire(16 << 20)
	show(reader, "ctxsync.weighted.capacity", "ctxsync.weighted.available")
	// Output:
	// ctxsync.weighted.available{ctxsync.weighted.name=memory} 50331648
	// ctxsync.weighted.capacity{ctxsync.weighted.name=memory} 67108864
}

func ExampleObserveQueue() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	jobs := ctxsync.NewQueue[string](0)
	reg, err := ctxsyncotel.ObserveQueue("jobs", jobs, ctxsyncotel.WithMeterProvider(mp),
		ctxsyncotel.WithAttributes(attribute.String("worker.pool", "thumbnails")))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	jobs.TryPut("a.png")
	jobs.TryPut("b.png")
	jobs.TryGet()
	show(reader, "ctxsync.queue.length", "ctxsync.queue.unfinished")
	// Output:
	// ctxsync.queue.length{ctxsync.queue.name=jobs,worker.pool=thumbnails} 1
	// ctxsync.queue.unfinished{ctxsync.queue.name=jobs,worker.pool=thumbnails} 2
}

func ExampleObserveLock() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	var config ctxsync.Lock // the zero Lock is ready to use
	reg, err := ctxsyncotel.ObserveLock("config", &config, ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	config.TryLock()
	show(reader, "ctxsync.lock.held", "ctxsync.lock.waiting")
	config.Unlock()
	// Output:
	// ctxsync.lock.held{ctxsync.lock.name=config} 1
	// ctxsync.lock.waiting{ctxsync.lock.name=config} 0
}

func ExampleWithDurationBuckets() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	// Calls that take seconds: coarser buckets than the default.
	m, err := ctxsyncotel.NewBreakerMetrics("batch", ctxsyncotel.WithMeterProvider(mp),
		ctxsyncotel.WithDurationBuckets(0.5, 1, 2, 5, 10, 30, 60))
	if err != nil {
		panic(err)
	}
	m.OnCall(nil)(breaker.CallEvent{Outcome: breaker.Success, State: breaker.Closed, Duration: 3 * time.Second})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, met := range rm.ScopeMetrics[0].Metrics {
		if h, ok := met.Data.(metricdata.Histogram[float64]); ok {
			p := h.DataPoints[0]
			fmt.Println(met.Name, p.Bounds, p.BucketCounts)
		}
	}
	// Output:
	// ctxsync.breaker.call.duration [0.5 1 2 5 10 30 60] [0 0 0 1 0 0 0 0]
}

// ObserveWatch reports a Watch's version, so that a dashboard shows how
// often a config changes.
func ExampleObserveWatch() {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	config := ctxsync.NewWatch("v1")
	reg, err := ctxsyncotel.ObserveWatch("config", config, ctxsyncotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()
	config.Store("v2")
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	sum := rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.Sum[int64])
	fmt.Println(rm.ScopeMetrics[0].Metrics[0].Name, sum.DataPoints[0].Value)
	// Output: ctxsync.watch.version 2
}
