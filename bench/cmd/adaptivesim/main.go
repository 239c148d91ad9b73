// Command adaptivesim runs the simulated service of issue 42 (see
// internal/adaptivesim) through its four phases, in a testing/synctest bubble,
// with adaptive.Limiter, failsafe-go's adaptive limiter and no limiter at all,
// and prints one table row per limiter and phase.
//
//	go run ./cmd/adaptivesim            # from bench/
//	go run ./cmd/adaptivesim -scale 0.5 # phases half as long
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/internal/adaptivesim"
)

var (
	scale = flag.Float64("scale", 1, "scale of the phases' durations")
	seed  = flag.Uint64("seed", 1, "seed of the arrivals and service times")
	only  = flag.String("only", "", "run only the limiter of this name")
)

type ours struct{ l *adaptive.Limiter }

func (o ours) Acquire(ctx context.Context) (adaptivesim.Permit, error) {
	t, err := o.l.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return t, nil
}
func (o ours) Limit() int { return o.l.Limit() }

// peer is failsafe-go's limiter. Without queueing (its default) a full
// limiter refuses at once: TryAcquirePermit. With queueing, a call waits
// as AcquirePermitWithMaxWait lets it.
type peer struct {
	l       adaptivelimiter.AdaptiveLimiter[any]
	maxWait time.Duration
}

type peerPermit struct{ p adaptivelimiter.Permit }

func (p peerPermit) Done(err error) {
	if err != nil {
		p.p.Drop()
		return
	}
	p.p.Record()
}

func (p peer) Acquire(ctx context.Context) (adaptivesim.Permit, error) {
	if p.maxWait == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pm, ok := p.l.TryAcquirePermit()
		if !ok {
			return nil, adaptivelimiter.ErrExceeded
		}
		return peerPermit{pm}, nil
	}
	pm, err := p.l.AcquirePermitWithMaxWait(ctx, p.maxWait)
	if err != nil {
		return nil, err
	}
	return peerPermit{pm}, nil
}
func (p peer) Limit() int { return p.l.Limit() }

func main() {
	testing.Init()
	flag.Parse()
	os.Args = os.Args[:1] // the flags are ours, not the testing package's
	type run struct {
		name string
		make func() adaptivesim.Limiter
	}
	runs := []run{
		{"ctxsync", func() adaptivesim.Limiter { return ours{adaptive.New(adaptive.Config{})} }},
		{"ctxsync-aimd", func() adaptivesim.Limiter { return ours{adaptive.New(adaptive.Config{Algorithm: adaptive.AIMD})} }},
		{"ctxsync-vegas", func() adaptivesim.Limiter { return ours{adaptive.New(adaptive.Config{Algorithm: adaptive.Vegas})} }},
		{"failsafe-go", func() adaptivesim.Limiter { return peer{l: adaptivelimiter.NewWithDefaults[any]()} }},
		{"failsafe-go-queueing", func() adaptivesim.Limiter {
			return peer{l: adaptivelimiter.NewBuilder[any]().WithQueueing(2, 3).Build(), maxWait: 25 * time.Millisecond}
		}},
		{"none", func() adaptivesim.Limiter { return nil }},
	}
	capacityRate := 100 / adaptivesim.Mean.Seconds()
	fmt.Printf("service: capacity 100 (%.0f calls/s), lognormal service time median %v, mean %v; client deadline %v; seed %d, scale %g\n\n",
		capacityRate, adaptivesim.Median, adaptivesim.Mean.Round(100*time.Microsecond), adaptivesim.Deadline, *seed, *scale)
	fmt.Println("| limiter | phase | goodput /s | % of capacity | p99 admitted | limit after 5 s | follow (limit within 25%) | shed | shed p99 | shed max | timeouts |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	results := map[string][]adaptivesim.Result{}
	var order []string
	tests := []testing.InternalTest{{Name: "Sim", F: func(t *testing.T) {
		for _, r := range runs {
			if *only != "" && r.name != *only {
				continue
			}
			var res []adaptivesim.Result
			synctest.Test(t, func(*testing.T) {
				lim := r.make()
				if lim == nil {
					res = adaptivesim.Run(nil, adaptivesim.Phases(100, *scale), *seed)
					return
				}
				res = adaptivesim.Run(lim, adaptivesim.Phases(100, *scale), *seed)
			})
			results[r.name] = res
			order = append(order, r.name)
			for _, x := range res {
				capRate := float64(x.Capacity) / adaptivesim.Mean.Seconds()
				fmt.Printf("| %s | %s (C=%d) | %.0f | %.0f%% | %v | %s | %s | %d | %v | %v | %d |\n",
					r.name, x.Phase, x.Capacity, x.Goodput, 100*x.Goodput/capRate, x.P99.Round(100*time.Microsecond),
					orDash(x.LimitAt5s), follow(x.Follow, x.LimitAt5s), x.Shed, x.ShedP99.Round(10*time.Microsecond),
					x.ShedMax.Round(10*time.Microsecond), x.Timeouts)
			}
		}
		verdicts(results, order)
	}}}
	testing.Main(func(string, string) (bool, error) { return true, nil }, tests, nil, nil)
}

// verdicts prints, for each limiter, whether the phases of overload (all but
// the first) meet the targets of issue 42, with the worst figure of each.
// The unloaded 99th percentile is that of the service with no limiter at half
// load, or the service's own, 40ms, if that run was left out.
func verdicts(results map[string][]adaptivesim.Result, order []string) {
	unloaded, from := 40*time.Millisecond, "the service's own"
	if none := results["none"]; len(none) > 0 {
		unloaded, from = none[0].P99, "with no limiter at half load"
	}
	fmt.Printf("\nTargets in the phases of overload (the unloaded p99 is %v, %s):\n\n", unloaded.Round(100*time.Microsecond), from)
	fmt.Printf("| limiter | goodput >= 90%% of capacity | p99 <= %v | limit within 25%% after 5 s | shed p99 <= 1ms |\n", (2 * unloaded).Round(100*time.Microsecond))
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, name := range order {
		if name == "none" {
			continue
		}
		minGood, maxP99, maxOff, maxShed := math.Inf(1), time.Duration(0), 0.0, time.Duration(0)
		for _, x := range results[name][1:] {
			minGood = min(minGood, x.Goodput/(float64(x.Capacity)/adaptivesim.Mean.Seconds()))
			maxP99 = max(maxP99, x.P99)
			maxOff = max(maxOff, math.Abs(float64(x.LimitAt5s-x.Capacity))/float64(x.Capacity))
			maxShed = max(maxShed, x.ShedP99)
		}
		fmt.Printf("| %s | %s (worst %.0f%%) | %s (worst %v) | %s (worst %.0f%%) | %s (worst %v) |\n", name,
			yes(minGood >= 0.9), 100*minGood, yes(maxP99 <= 2*unloaded), maxP99.Round(100*time.Microsecond),
			yes(maxOff <= 0.25), 100*maxOff, yes(maxShed <= time.Millisecond), maxShed.Round(10*time.Microsecond))
	}
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func orDash(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func follow(d time.Duration, limit int) string {
	if limit < 0 {
		return "-"
	}
	if d < 0 {
		return "never"
	}
	return d.String()
}
