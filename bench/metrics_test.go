package bench

import (
	"context"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
)

// The cost of metrics. impl=ctxsync-prometheus is a pool with the hooks of
// extra/ctxsyncprom, given the pool's name; impl=ctxsync-prometheus-own-name
// the hooks made with no name, which read it from each event; their peer
// impl=no-hooks is the same pool without them, so that the report's ratio is
// what the hooks cost (the target: at most 1.5×).

func newMetricsPool(b *testing.B, size int, hooks pool.Hooks) *pool.Pool[*benchConn] {
	p, err := pool.New(pool.Config[*benchConn]{Name: "db", New: newBenchConn, MaxSize: size, Hooks: hooks})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

var metricsImpls = []struct {
	name  string
	hooks func() pool.Hooks
}{
	{"ctxsync-prometheus", func() pool.Hooks {
		return ctxsyncprom.NewCollector(ctxsyncprom.Config{}).PoolHooks("db")
	}},
	{"ctxsync-prometheus-own-name", func() pool.Hooks {
		return ctxsyncprom.NewCollector(ctxsyncprom.Config{}).PoolHooks("")
	}},
	{"no-hooks", func() pool.Hooks { return pool.Hooks{} }},
}

func acquireRelease(p *pool.Pool[*benchConn]) func(context.Context) {
	return func(ctx context.Context) {
		r, err := p.Acquire(ctx)
		must(err)
		r.Value().n++
		r.Release()
	}
}

// BenchmarkMetricsPoolAcquireRelease: Acquire then Release of an idle
// resource, as BenchmarkPoolAcquireRelease, with and without the hooks; and
// 16 goroutines sharing 4 resources, where Acquires wait and the hooks
// observe the wait histogram.
func BenchmarkMetricsPoolAcquireRelease(b *testing.B) {
	for _, impl := range metricsImpls {
		b.Run("run=serial/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			op := acquireRelease(newMetricsPool(b, 4, impl.hooks()))
			ctx := benchCtx(b)
			op(ctx) // make the resource
			b.ResetTimer()
			for b.Loop() {
				op(ctx)
			}
		})
		b.Run("run=parallel/impl="+impl.name, func(b *testing.B) {
			b.ReportAllocs()
			op := acquireRelease(newMetricsPool(b, 64, impl.hooks()))
			ctx := benchCtx(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op(ctx)
				}
			})
		})
		b.Run("goroutines=16/size=4/impl="+impl.name, func(b *testing.B) {
			inGoroutines(b, 16, acquireRelease(newMetricsPool(b, 4, impl.hooks())))
		})
	}
}

// BenchmarkMetricsScrape: a registry's Gather of 100 pools, each with a
// resource made and used (the target: under 1 ms). Its peers give the same
// 19 series per pool: impl=const-metrics the plain way, a
// prometheus.MustNewConstMetric per series at each scrape, as client_golang's
// DBStatsCollector does; impl=client_golang-vecs from GaugeVecs set once,
// which read no snapshot and allocate nothing of their own at a scrape: the
// floor of what the registry itself costs for that many series.
// histograms=on adds each pool's two histograms (from PoolHooks).
func BenchmarkMetricsScrape(b *testing.B) {
	const n = 100
	pools := func(b *testing.B, c *ctxsyncprom.Collector) []*pool.Pool[*benchConn] {
		ps := make([]*pool.Pool[*benchConn], n)
		for i := range ps {
			var hooks pool.Hooks
			if c != nil {
				hooks = c.PoolHooks("pool" + strconv.Itoa(i))
			}
			ps[i] = newMetricsPool(b, 4, hooks)
			acquireRelease(ps[i])(context.Background())
		}
		return ps
	}
	gather := func(b *testing.B, c prometheus.Collector) {
		b.ReportAllocs()
		reg := prometheus.NewRegistry()
		reg.MustRegister(c)
		for b.Loop() {
			if _, err := reg.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("pools=100/impl=ctxsync-prometheus", func(b *testing.B) {
		c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
		for i, p := range pools(b, nil) {
			must(c.AddPool("pool"+strconv.Itoa(i), p))
		}
		gather(b, c)
	})
	// The Collector as a Gatherer of its own, served alone or beside a
	// registry through prometheus.Gatherers.
	b.Run("pools=100/impl=ctxsync-prometheus-gatherer", func(b *testing.B) {
		c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
		for i, p := range pools(b, nil) {
			must(c.AddPool("pool"+strconv.Itoa(i), p))
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pools=100/impl=ctxsync-prometheus-gatherers", func(b *testing.B) {
		c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
		for i, p := range pools(b, nil) {
			must(c.AddPool("pool"+strconv.Itoa(i), p))
		}
		g := prometheus.Gatherers{prometheus.NewRegistry(), c}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := g.Gather(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pools=100/impl=const-metrics", func(b *testing.B) {
		gather(b, newConstPoolCollector(pools(b, nil)))
	})
	b.Run("pools=100/impl=client_golang-vecs", func(b *testing.B) {
		gather(b, newVecPoolCollector(pools(b, nil)))
	})
	b.Run("pools=100/histograms=on/impl=ctxsync-prometheus", func(b *testing.B) {
		c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
		for i, p := range pools(b, c) {
			must(c.AddPool("pool"+strconv.Itoa(i), p))
		}
		gather(b, c)
	})
}

// constPoolCollector exports the series of ctxsyncprom's pool metrics the
// plain way: a const metric per series, its labels made at each scrape.
type constPoolCollector struct {
	pools  []*pool.Pool[*benchConn]
	names  []string
	descs  []*prometheus.Desc // name label; the first two have a second one
	labels [2][]string        // the second label's values for descs[0] and [1]
}

func newConstPoolCollector(ps []*pool.Pool[*benchConn]) *constPoolCollector {
	c := &constPoolCollector{pools: ps, labels: [2][]string{
		{"closing", "constructing", "idle", "in_use"},
		{"destroy", "health", "idle", "lifetime", "pool"},
	}}
	for i := range ps {
		c.names = append(c.names, "pool"+strconv.Itoa(i))
	}
	d := func(name string, labels ...string) {
		c.descs = append(c.descs, prometheus.NewDesc("const_pool_"+name, "help", append([]string{"name"}, labels...), nil))
	}
	d("resources", "state")
	d("closed_total", "reason")
	for _, name := range []string{"max_resources", "waiters", "acquires_total", "empty_acquires_total",
		"canceled_acquires_total", "waits_total", "wait_duration_seconds_total", "created_total",
		"create_failures_total", "close_errors_total"} {
		d(name)
	}
	return c
}

func (c *constPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *constPoolCollector) Collect(ch chan<- prometheus.Metric) {
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	for i, p := range c.pools {
		s, name := p.Stats(), c.names[i]
		for j, v := range []int{s.Closing, s.Constructing, s.Idle, s.InUse} {
			ch <- prometheus.MustNewConstMetric(c.descs[0], g, float64(v), name, c.labels[0][j])
		}
		for j, v := range []int64{s.ClosedDestroy, s.ClosedHealth, s.ClosedIdle, s.ClosedLifetime, s.ClosedPool} {
			ch <- prometheus.MustNewConstMetric(c.descs[1], k, float64(v), name, c.labels[1][j])
		}
		ch <- prometheus.MustNewConstMetric(c.descs[2], g, float64(s.Max), name)
		ch <- prometheus.MustNewConstMetric(c.descs[3], g, float64(s.Waiting), name)
		for j, v := range []float64{float64(s.AcquireCount), float64(s.EmptyAcquires), float64(s.CanceledAcquires),
			float64(s.WaitCount), s.WaitDuration.Seconds(), float64(s.Created), float64(s.CreateFailures), float64(s.CloseErrors)} {
			ch <- prometheus.MustNewConstMetric(c.descs[4+j], k, v, name)
		}
	}
}

// newVecPoolCollector returns the series of constPoolCollector as GaugeVecs,
// set once from each pool's Stats.
func newVecPoolCollector(ps []*pool.Pool[*benchConn]) prometheus.Collector {
	c := newConstPoolCollector(ps)
	ch := make(chan prometheus.Metric, len(ps)*19)
	c.Collect(ch)
	close(ch)
	vecs := map[*prometheus.Desc]*prometheus.GaugeVec{}
	var all multiCollector
	for i, d := range c.descs {
		labels := []string{"name"}
		if i < 2 {
			labels = append(labels, "label")
		}
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vec_pool_" + strconv.Itoa(i), Help: "help"}, labels)
		vecs[d] = v
		all = append(all, v)
	}
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			panic(err)
		}
		var values []string
		for _, l := range out.Label {
			values = append(values, l.GetValue())
		}
		v := out.GetGauge().GetValue() + out.GetCounter().GetValue()
		vecs[m.Desc()].WithLabelValues(values...).Set(v)
	}
	return all
}

// multiCollector is several collectors registered as one.
type multiCollector []prometheus.Collector

func (m multiCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m {
		c.Describe(ch)
	}
}

func (m multiCollector) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m {
		c.Collect(ch)
	}
}
