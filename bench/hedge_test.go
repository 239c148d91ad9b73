package bench

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cristalhq/hedgedhttp"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"

	"github.com/ctxsync/ctxsync/retry"
)

// hedgeService is the simulated service of issue 43: each attempt, on its
// own, takes fast with probability 1-pSlow and slow otherwise, on the
// bubble's virtual clock, and returns at once when its ctx ends.
type hedgeService struct {
	fast, slow time.Duration
	pSlow      float64
	mu         sync.Mutex
	rng        *rand.Rand // guarded by mu
	attempts   atomic.Int64
}

func (s *hedgeService) wait(ctx context.Context) error {
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
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RoundTrip makes the service an http.RoundTripper for the HTTP hedgers.
func (s *hedgeService) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := s.wait(req.Context()); err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

// hedgeImpl is a way to call the service hedged: call is made in the
// bubble, once per run.
type hedgeImpl struct {
	name string
	call func(s *hedgeService) func(ctx context.Context) error
	// realTime: it cannot run in a synctest bubble. hedgedhttp's
	// goroutine pool waits on a package-level channel, made outside any
	// bubble: a bubble whose goroutines wait on it never counts as idle,
	// so its virtual clock never moves, and the run hangs.
	realTime bool
}

func httpCall(rt http.RoundTripper) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://service/", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
}

// The hedgers side by side, each as a user would set it up for this
// service: ours and failsafe-go's following the latency's 95th percentile
// with a budget of 10%; hedgedhttp, which has neither, with a fixed delay
// of 20ms, twice the usual latency.
var hedgeImpls = []hedgeImpl{
	{"unhedged", func(s *hedgeService) func(ctx context.Context) error { return s.wait }, false},
	{"ctxsync", func(s *hedgeService) func(ctx context.Context) error {
		h := retry.Hedge{Budget: retry.NewBudget(0.1, 0)}
		return func(ctx context.Context) error {
			_, err := retry.DoHedged(ctx, h, func(ctx context.Context) (struct{}, error) { return struct{}{}, s.wait(ctx) })
			return err
		}
	}, false},
	{"ctxsync-transport", func(s *hedgeService) func(ctx context.Context) error {
		return httpCall(&retry.Transport{Base: s, Policy: retry.Policy{MaxAttempts: 1}, Hedge: &retry.Hedge{Budget: retry.NewBudget(0.1, 0)}})
	}, false},
	{"failsafe-go", func(s *hedgeService) func(ctx context.Context) error {
		hp := hedgepolicy.NewBuilderWithDelayQuantile[any](0.95, 1000, 20).
			WithBudget(budget.NewBuilder().WithMaxRate(0.1).Build()).Build()
		ex := failsafe.With[any](hp)
		return func(ctx context.Context) error {
			_, err := ex.WithContext(ctx).GetWithExecution(func(e failsafe.Execution[any]) (any, error) {
				return nil, s.wait(e.Context())
			})
			return err
		}
	}, false},
	{"hedgedhttp", func(s *hedgeService) func(ctx context.Context) error {
		rt, err := hedgedhttp.NewRoundTripper(20*time.Millisecond, 2, s)
		if err != nil {
			panic(err)
		}
		return httpCall(rt)
	}, true},
}

// runHedgeSimulation makes clients × perClient calls through impl to a
// service that takes fast, or slow with probability pSlow, and logs p50,
// p99 and the extra calls.
func runHedgeSimulation(t *testing.T, impl hedgeImpl, load string, fast, slow time.Duration, pSlow float64, clients, perClient int) {
	s := &hedgeService{fast: fast, slow: slow, pSlow: pSlow, rng: rand.New(rand.NewPCG(1, 43))}
	call := impl.call(s)
	lat := make([]time.Duration, clients*perClient)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				start := time.Now()
				if err := call(t.Context()); err != nil {
					t.Errorf("%s: %v", impl.name, err)
				}
				lat[c*perClient+i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	slices.Sort(lat)
	n := len(lat)
	t.Logf("load=%s impl=%s: p50 %v p99 %v extra calls %.1f%%", load, impl.name,
		lat[n/2].Round(10*time.Microsecond), lat[n*99/100].Round(10*time.Microsecond),
		100*float64(s.attempts.Load()-int64(n))/float64(n))
}

// TestHedgeSimulation runs issue 43's simulation against each hedger that
// can run in virtual time: 20 clients make 500 calls each, one after the
// other, to a service that answers in 10ms 95% of the time and in 200ms
// otherwise, per attempt; then 100 each to one that takes 200ms for
// everyone. It logs p50, p99 and the extra calls (run with -v). The
// library's own claims are checked in retry's TestHedgeSimulation.
func TestHedgeSimulation(t *testing.T) {
	for _, impl := range hedgeImpls {
		if impl.realTime {
			continue
		}
		synctest.Test(t, func(t *testing.T) {
			runHedgeSimulation(t, impl, "mixed", 10*time.Millisecond, 200*time.Millisecond, 0.05, 20, 500)
		})
		synctest.Test(t, func(t *testing.T) {
			runHedgeSimulation(t, impl, "all-slow", 200*time.Millisecond, 200*time.Millisecond, 0, 20, 100)
		})
	}
}

// TestHedgeSimulationRealTime runs the simulation in real time, for the
// hedgers that cannot run in a bubble (hedgedhttp) beside ours, with
// fewer calls: 20 clients, 100 calls each (20 for the slow service). Set
// CTXSYNC_HEDGE_REALTIME=1 to run it; its figures depend on the machine's
// timers being on time, and are only logged.
func TestHedgeSimulationRealTime(t *testing.T) {
	if os.Getenv("CTXSYNC_HEDGE_REALTIME") == "" {
		t.Skip("set CTXSYNC_HEDGE_REALTIME=1 to run the simulation in real time")
	}
	for _, impl := range hedgeImpls {
		runHedgeSimulation(t, impl, "mixed", 10*time.Millisecond, 200*time.Millisecond, 0.05, 20, 100)
		runHedgeSimulation(t, impl, "all-slow", 200*time.Millisecond, 200*time.Millisecond, 0, 20, 20)
	}
}

// BenchmarkHedgeCall is the cost of hedging on a call that answers at once,
// as most do: the machinery every call pays for, no copy sent.
func BenchmarkHedgeCall(b *testing.B) {
	fn := func(context.Context) (int, error) { return 1, nil }
	b.Run("impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		ctx := benchCtx(b)
		h := retry.Hedge{Delay: time.Second, Budget: retry.NewBudget(0.1, 1)}
		for b.Loop() {
			_, _ = retry.DoHedged(ctx, h, fn)
		}
	})
	b.Run("impl=failsafe-go", func(b *testing.B) {
		b.ReportAllocs()
		ctx := benchCtx(b)
		ex := failsafe.With[int](hedgepolicy.NewBuilderWithDelay[int](time.Second).
			WithBudget(budget.NewBuilder().WithMaxRate(0.1).Build()).Build()).WithContext(ctx)
		for b.Loop() {
			_, _ = ex.GetWithExecution(func(e failsafe.Execution[int]) (int, error) { return fn(e.Context()) })
		}
	})
}

// okTransport answers every request at once, with a shared empty body.
type okTransport struct{}

func (okTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
}

// BenchmarkHedgeRoundTrip is BenchmarkHedgeCall through an http.RoundTripper.
func BenchmarkHedgeRoundTrip(b *testing.B) {
	run := func(b *testing.B, rt http.RoundTripper) {
		b.ReportAllocs()
		req, _ := http.NewRequestWithContext(benchCtx(b), http.MethodGet, "http://service/", nil)
		for b.Loop() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			_ = resp.Body.Close()
		}
	}
	b.Run("impl=ctxsync", func(b *testing.B) {
		run(b, &retry.Transport{Base: okTransport{}, Hedge: &retry.Hedge{Delay: time.Second, Budget: retry.NewBudget(0.1, 1)}})
	})
	b.Run("impl=hedgedhttp", func(b *testing.B) {
		rt, err := hedgedhttp.NewRoundTripper(time.Second, 2, okTransport{})
		if err != nil {
			b.Fatal(err)
		}
		run(b, rt)
	})
}
