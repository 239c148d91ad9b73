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
