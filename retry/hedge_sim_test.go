package retry_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/retry"
)

// simService is a service whose every attempt, independently, takes fast
// with probability 1-pSlow and slow otherwise, on the bubble's virtual
// clock; an attempt whose ctx is cancelled returns at once.
type simService struct {
	fast, slow time.Duration
	pSlow      float64

	mu       sync.Mutex
	rng      *rand.Rand // guarded by mu
	attempts atomic.Int64
}

func newSimService(seed uint64, fast, slow time.Duration, pSlow float64) *simService {
	return &simService{fast: fast, slow: slow, pSlow: pSlow, rng: rand.New(rand.NewPCG(seed, 43))}
}

func (s *simService) call(ctx context.Context) (int, error) {
	s.attempts.Add(1)
	s.mu.Lock()
	d := s.fast
	if s.rng.Float64() < s.pSlow {
		d = s.slow
	}
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return 1, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// simResult is what a simulated run measured.
type simResult struct {
	calls, attempts int
	p50, p99        time.Duration
}

func (r simResult) extra() float64 { return float64(r.attempts-r.calls) / float64(r.calls) }

// simulate makes clients × perClient calls to s through call, each client
// calling one after the other, and measures them. It runs in a bubble.
func simulate(t *testing.T, s *simService, clients, perClient int, call func(ctx context.Context) (int, error)) simResult {
	t.Helper()
	lat := make([]time.Duration, clients*perClient)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				start := time.Now()
				if _, err := call(t.Context()); err != nil {
					t.Errorf("call: %v", err)
				}
				lat[c*perClient+i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	slices.Sort(lat)
	return simResult{
		calls:    len(lat),
		attempts: int(s.attempts.Load()),
		p50:      lat[len(lat)/2],
		p99:      lat[len(lat)*99/100],
	}
}

// TestHedgeSimulation is the proof of Hedge: a service that answers in
// 10ms 95% of the time and in 200ms otherwise, per attempt. Hedged with the
// Delay that follows its latency and a Budget of 10%, the 99th percentile
// of the calls' latency is at least 5 times lower than unhedged, and the
// extra calls are at most 10% of the calls. When the service slows for
// everyone (every attempt 200ms), hedges stay within the Budget, with the
// latency-following Delay and with a fixed one.
func TestHedgeSimulation(t *testing.T) {
	const clients, perClient = 20, 500
	const fast, slow = 10 * time.Millisecond, 200 * time.Millisecond
	hedgedCall := func(s *simService, h retry.Hedge) func(ctx context.Context) (int, error) {
		return func(ctx context.Context) (int, error) { return retry.DoHedged(ctx, h, s.call) }
	}
	var plain, hedged simResult
	synctest.Test(t, func(t *testing.T) {
		s := newSimService(1, fast, slow, 0.05)
		plain = simulate(t, s, clients, perClient, s.call)
	})
	synctest.Test(t, func(t *testing.T) {
		s := newSimService(1, fast, slow, 0.05)
		h := retry.Hedge{Budget: retry.NewBudget(0.1, 0)}
		hedged = simulate(t, s, clients, perClient, hedgedCall(s, h))
	})
	t.Logf("unhedged: p50 %v p99 %v extra %.1f%%", plain.p50, plain.p99, 100*plain.extra())
	t.Logf("hedged:   p50 %v p99 %v extra %.1f%%", hedged.p50, hedged.p99, 100*hedged.extra())
	if hedged.p99*5 > plain.p99 {
		t.Errorf("hedged p99 = %v, want at most %v (unhedged %v / 5)", hedged.p99, plain.p99/5, plain.p99)
	}
	if hedged.extra() > 0.10 {
		t.Errorf("hedged extra calls = %.2f%% of calls, want at most 10%%", 100*hedged.extra())
	}

	for _, delay := range []time.Duration{0, 20 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			s := newSimService(2, slow, slow, 0)
			h := retry.Hedge{Delay: delay, Budget: retry.NewBudget(0.1, 0)}
			// 25 calls each, 5s: within one window of the Budget, where its
			// bound is exact.
			r := simulate(t, s, clients, perClient/20, hedgedCall(s, h))
			t.Logf("all slow, Delay %v: p50 %v p99 %v extra %.2f%% (%d attempts, %d calls)", delay, r.p50, r.p99, 100*r.extra(), r.attempts, r.calls)
			if r.extra() > 0.10 {
				t.Errorf("all slow, Delay %v: extra calls = %.2f%% of calls, want at most 10%%", delay, 100*r.extra())
			}
		})
	}
}
