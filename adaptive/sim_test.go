package adaptive_test

import (
	"context"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/internal/adaptivesim"
)

// simLimiter runs an adaptive.Limiter in the simulation. A client that gave
// up is an overload failure: the service did not answer in time.
type simLimiter struct{ l *adaptive.Limiter }

func (s simLimiter) Acquire(ctx context.Context) (adaptivesim.Permit, error) {
	t, err := s.l.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (s simLimiter) Limit() int { return s.l.Limit() }

func runSim(t *testing.T, cfg adaptive.Config, c int, scale float64) []adaptivesim.Result {
	var res []adaptivesim.Result
	synctest.Test(t, func(t *testing.T) {
		res = adaptivesim.Run(simLimiter{adaptive.New(cfg)}, adaptivesim.Phases(c, scale), 1)
	})
	return res
}

// TestSimulation is the proof of issue 42, in virtual time: the default
// Limiter in front of the simulated service (capacity 100, then 50, then
// 100, under three times its capacity) meets the targets in every phase of
// overload: goodput at least 90% of capacity, the 99th percentile of admitted
// calls at most twice the service's own (40 ms: the bound is 80 ms;
// this test asks for 60), shed calls refused within 1 ms, the limit near the
// capacity 5 s into the phase, and the limit within 25% of the cut capacity
// in half a second. The phases are 0.3 times the (3 s, then 6 s each)
// to keep the suite short; bench/cmd/adaptivesim runs them whole, and checks
// the figures there.
//
// The bubble makes time virtual, not the order in which runnable goroutines
// run, so the figures move a little from run to run. Over 20 runs: goodput
// 92-99%, p99 51-55 ms, the limit 5 s in 9% below to 14% above a capacity of
// 100 and 10-26% above the cut capacity of 50, which it followed in
// 160-190 ms. Gradient2 holds the limit between the capacity and the
// capacity plus its noise tolerance (10% and three standard errors of a
// window's mean), so the test allows 20% below and 30% above.
func TestSimulation(t *testing.T) {
	if testing.Short() || raceEnabled {
		// 400,000 calls: under the race detector, a minute. The hammer
		// test covers the races; this one the behaviour.
		t.Skip("the simulation runs 400,000 calls; not in -short or -race")
	}
	res := runSim(t, adaptive.Config{}, 100, 0.3)
	for _, r := range res[1:] {
		capRate := float64(r.Capacity) / adaptivesim.Mean.Seconds()
		t.Logf("%-14s goodput %5.0f/s (%3.0f%%) p99 %v limit@5s %d follow %v shed %d (p99 %v, max %v)",
			r.Phase, r.Goodput, 100*r.Goodput/capRate, r.P99, r.LimitAt5s, r.Follow, r.Shed, r.ShedP99, r.ShedMax)
		if r.Goodput < 0.9*capRate {
			t.Errorf("%s: goodput %.0f/s, want at least 90%% of %.0f/s", r.Phase, r.Goodput, capRate)
		}
		if r.P99 > 60*time.Millisecond {
			t.Errorf("%s: p99 of admitted calls %v, want at most 60ms", r.Phase, r.P99)
		}
		if 10*r.LimitAt5s < 8*r.Capacity || 10*r.LimitAt5s > 13*r.Capacity {
			t.Errorf("%s: limit after 5 s %d, want from 20%% below to 30%% above %d", r.Phase, r.LimitAt5s, r.Capacity)
		}
		if r.ShedP99 > time.Millisecond {
			t.Errorf("%s: 99th percentile of shed calls %v, want at most 1ms", r.Phase, r.ShedP99)
		}
		if r.Capacity == 50 && (r.Follow < 0 || r.Follow > 500*time.Millisecond) {
			t.Errorf("%s: the limit came within 25%% of the cut capacity after %v, want within 500ms", r.Phase, r.Follow)
		}
	}
}

func TestSimExplore(t *testing.T) {
	if os.Getenv("ADAPTIVE_SIM") == "" {
		t.Skip("ADAPTIVE_SIM not set")
	}
	for _, alg := range []adaptive.Algorithm{adaptive.AIMD, adaptive.Vegas, adaptive.Gradient2} {
		start := time.Now()
		res := runSim(t, adaptive.Config{Algorithm: alg}, 100, 1)
		t.Logf("%v (%v real)", alg, time.Since(start))
		for _, r := range res {
			t.Logf("  %-14s goodput %6.0f/s (%3.0f%%) p99 %v limit@5s %d follow %v shed %d shedP99 %v shedMax %v timeouts %d",
				r.Phase, r.Goodput, 100*r.Goodput/(float64(r.Capacity)/adaptivesim.Mean.Seconds()), r.P99, r.LimitAt5s, r.Follow, r.Shed, r.ShedP99, r.ShedMax, r.Timeouts)
		}
	}
}
