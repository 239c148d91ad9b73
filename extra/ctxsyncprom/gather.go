package ctxsyncprom

import (
	"cmp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Gather returns the Collector's metric families, as a registry holding it
// alone would: a Collector is a prometheus.Gatherer too. It is the fastest
// way to scrape it, for many sources: a registry checks every series it
// gathers against the others (hashing its labels), which costs more than
// reading the snapshots, while a Collector's series are consistent by
// construction, their labels made once per source.
//
// Serve it on its own, with promhttp.HandlerFor(c, promhttp.HandlerOpts{}),
// beside the registry's handler, or with the registry's metrics through
// prometheus.Gatherers{reg, c}, which checks the Collector's series once
// more as it merges them. A Collector gathered this way must not be
// registered in reg too: its series would be there twice.
//
// The families are sorted by name, and the series of each by their labels'
// values, as a registry sorts them.
func (c *Collector) Gather() ([]*dto.MetricFamily, error) {
	c.mustBeMade()
	slab := c.srcs.Load().collect()
	// Count the series of each description, then give each family its
	// slice of one slab of metrics, and each value its message in another.
	counts := make(map[*prometheus.Desc]int, len(c.d.info))
	for i := range slab {
		counts[slab[i].desc]++
	}
	fams := make(map[*prometheus.Desc]*dto.MetricFamily, len(counts)+4)
	metrics := make([]dto.Metric, len(slab))
	ptrs := make([]*dto.Metric, len(slab))
	for i := range ptrs {
		ptrs[i] = &metrics[i]
	}
	values := make([]float64, len(slab))
	var counters, gauges int
	for i := range slab {
		if slab[i].counter {
			counters++
		} else {
			gauges++
		}
	}
	cs := make([]dto.Counter, counters)
	gs := make([]dto.Gauge, gauges)
	counter, gauge := dto.MetricType_COUNTER, dto.MetricType_GAUGE
	next := 0
	for i := range slab {
		s := &slab[i]
		mf := fams[s.desc]
		if mf == nil {
			n := counts[s.desc]
			info := c.d.info[s.desc]
			mf = &dto.MetricFamily{Name: &info.name, Help: &info.help, Metric: ptrs[next : next : next+n]}
			if s.counter {
				mf.Type = &counter
			} else {
				mf.Type = &gauge
			}
			next += n
			fams[s.desc] = mf
		}
		j := len(mf.Metric)
		mf.Metric = mf.Metric[:j+1]
		m := mf.Metric[j]
		m.Label = s.labels
		values[i] = s.value
		if s.counter {
			cs[0].Value = &values[i]
			m.Counter, cs = &cs[0], cs[1:]
		} else {
			gs[0].Value = &values[i]
			m.Gauge, gs = &gs[0], gs[1:]
		}
	}

	// The histograms, through their vectors' own Collect and Write.
	histogram := dto.MetricType_HISTOGRAM
	for _, v := range c.vecs() {
		ch := make(chan prometheus.Metric, 64)
		go func() {
			v.Collect(ch)
			close(ch)
		}()
		for h := range ch {
			m := &dto.Metric{}
			if err := h.Write(m); err != nil {
				for range ch { // let the goroutine end
				}
				return nil, err
			}
			mf := fams[h.Desc()]
			if mf == nil {
				info := c.d.info[h.Desc()]
				mf = &dto.MetricFamily{Name: &info.name, Help: &info.help, Type: &histogram}
				fams[h.Desc()] = mf
			}
			mf.Metric = append(mf.Metric, m)
		}
	}

	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, mf := range fams {
		slices.SortFunc(mf.Metric, cmpLabels)
		out = append(out, mf)
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}

// cmpLabels orders two series of one family by their labels' values, taken
// in the order of the labels' names, as a registry does.
func cmpLabels(a, b *dto.Metric) int {
	for i := range min(len(a.Label), len(b.Label)) {
		if c := strings.Compare(a.Label[i].GetValue(), b.Label[i].GetValue()); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a.Label), len(b.Label))
}
