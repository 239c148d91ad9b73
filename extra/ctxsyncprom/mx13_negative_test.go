package ctxsyncprom_test

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/ratelimit"
)

type negTally struct{}

func (negTally) Counts() ratelimit.TallyCounts {
	return ratelimit.TallyCounts{Allowed: -1, Refused: math.MinInt64, Waited: -5, WaitFailed: -1}
}

type negBreaker struct{}

func (negBreaker) Metrics() breaker.Metrics {
	return breaker.Metrics{Name: "b", FailureRate: breaker.NoRate, SlowCallRate: breaker.NoRate,
		Total: breaker.Counts{Successes: -1, Failures: -2, Ignored: -3, Rejected: math.MinInt64, Slow: -4}}
}

type negAdaptive struct{}

func (negAdaptive) Limit() int             { return 1 }
func (negAdaptive) InFlight() int          { return 0 }
func (negAdaptive) Waiting() int           { return 0 }
func (negAdaptive) Shed() int64            { return -7 }
func (negAdaptive) Latency() time.Duration { return 0 }

// TestMX13CountersNeverNegative pins a defect of every counter read from a
// source of the user's own (a Pool, Breaker, Tally or AdaptiveLimiter that
// is not the library's): a negative count was exported as it was read, a
// counter below zero, which OpenMetrics forbids (a counter's total is never
// negative; client_golang's own Counter panics on Add of one), which
// rate() over it reads as growth when it comes back up, and which
// ctxsyncotel, reading the same source, reports as 0. The right behaviour,
// as ctxsyncotel's: a negative count is exported as 0, which Prometheus
// reads as a reset if the count was above it.
func TestMX13CountersNeverNegative(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	st := fixedStats{Name: "p", AcquireCount: -1, EmptyAcquires: -1, CanceledAcquires: -1, WaitCount: -1,
		WaitDuration: -time.Second, Created: -1, CreateFailures: -1, CloseErrors: -1,
		ClosedDestroy: -1, ClosedHealth: -1, ClosedIdle: -1, ClosedLifetime: math.MinInt64, ClosedPool: -1}
	for _, err := range []error{
		c.AddPool("", st),
		c.AddBreaker("", negBreaker{}),
		c.AddTally("t", negTally{}),
		c.AddAdaptiveLimiter("a", negAdaptive{}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	for what, g := range map[string]prometheus.Gatherer{"registry": reg, "Gather": c} {
		fams, err := g.Gather()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		counters := 0
		for _, mf := range fams {
			if mf.GetType() != dto.MetricType_COUNTER {
				continue
			}
			for _, m := range mf.Metric {
				counters++
				if v := m.GetCounter().GetValue(); !(v >= 0) {
					t.Errorf("%s: %s%v = %v, want 0", what, mf.GetName(), m.Label, v)
				}
			}
		}
		if counters == 0 {
			t.Fatalf("%s: no counter gathered", what)
		}
	}
}
