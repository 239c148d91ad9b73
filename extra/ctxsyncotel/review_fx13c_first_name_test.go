package ctxsyncotel_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

// summingProvider gives Meters whose counters add into sum, and panic once
// if panicOnce is set.
type summingProvider struct {
	noop.MeterProvider
	sum       *atomic.Int64
	panicOnce *atomic.Bool
}

func (p summingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return summingMeter{p: p}
}

type summingMeter struct {
	noop.Meter
	p summingProvider
}

func (m summingMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return summingCounter{p: m.p}, nil
}

type summingCounter struct {
	noop.Int64Counter
	p summingProvider
}

func (c summingCounter) Add(_ context.Context, n int64, _ ...metric.AddOption) {
	if c.p.panicOnce != nil && c.p.panicOnce.CompareAndSwap(true, false) {
		panic("meter down")
	}
	c.p.sum.Add(n)
}

// The changes of state told while the first name is being learned are each
// counted once: those held before it by the learning call, after its
// unlock, and those after it directly. Many goroutines tell changes while
// others make the first call. (Held.)
func TestReviewFx13cFirstNameRaceCountsEachChangeOnce(t *testing.T) {
	for range 50 {
		var sum atomic.Int64
		m, err := ctxsyncotel.NewBreakerMetrics("", ctxsyncotel.WithMeterProvider(summingProvider{sum: &sum}))
		if err != nil {
			t.Fatal(err)
		}
		onCall, onChange := m.OnCall(nil), m.OnStateChange(nil)
		const changers, each = 4, 50
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range changers + 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if i >= changers {
					onCall(breaker.CallEvent{Name: "b", Outcome: breaker.Rejected})
					return
				}
				for j := range each {
					onChange(breaker.Closed, breaker.State(j%4), breaker.Counts{}) // 3: the "other" state
				}
			}()
		}
		close(start)
		wg.Wait()
		if got := sum.Load(); got != changers*each {
			t.Fatalf("counted %d changes, told %d", got, changers*each)
		}
	}
}

// A Meter whose Add panics as the held changes are counted: the panic
// reaches the call that learned the name, the name stays learned, and the
// changes told after it are counted at once, none held for good. (Held.)
func TestReviewFx13cFirstNameMeterPanics(t *testing.T) {
	var sum atomic.Int64
	var boom atomic.Bool
	m, err := ctxsyncotel.NewBreakerMetrics("", ctxsyncotel.WithMeterProvider(summingProvider{sum: &sum, panicOnce: &boom}))
	if err != nil {
		t.Fatal(err)
	}
	onCall, onChange := m.OnCall(nil), m.OnStateChange(nil)
	onChange(breaker.Closed, breaker.Open, breaker.Counts{}) // held
	boom.Store(true)
	if !panics(func() { onCall(breaker.CallEvent{Name: "b", Outcome: breaker.Rejected}) }) {
		t.Fatal("the Meter's panic did not reach the call that learned the name")
	}
	onChange(breaker.Open, breaker.HalfOpen, breaker.Counts{})
	if got := sum.Load(); got != 1 {
		t.Fatalf("counted %d changes after the panic, want the 1 told after it", got)
	}
	onCall(breaker.CallEvent{Name: "other", Outcome: breaker.Rejected}) // the lock is free
}

// A user's hook that calls runtime.Goexit (t.FailNow in a test's hook) runs
// once, after ours, and its Goexit goes on: the deferred closure that calls
// it is not run again by the Goexit. (Held.)
func TestReviewFx13cUserHookGoexitRunsOnce(t *testing.T) {
	bm, err := ctxsyncotel.NewBreakerMetrics("b")
	if err != nil {
		t.Fatal(err)
	}
	pm, err := ctxsyncotel.NewPoolMetrics("p")
	if err != nil {
		t.Fatal(err)
	}
	lm, err := ctxsyncotel.NewLimiterMetrics("l")
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	exit := func() { runs.Add(1); runtime.Goexit() }
	hooks := pm.Hooks(pool.Hooks{
		OnAcquire: func(pool.AcquireEvent) { exit() },
		OnCreate:  func(pool.CreateEvent) { exit() },
	})
	cases := map[string]func(){
		"Breaker.OnCall": func() { bm.OnCall(func(breaker.CallEvent) { exit() })(breaker.CallEvent{Name: "b"}) },
		"Breaker.OnStateChange": func() {
			bm.OnStateChange(func(_, _ breaker.State, _ breaker.Counts) { exit() })(0, 1, breaker.Counts{})
		},
		"Pool.OnAcquire": func() { hooks.OnAcquire(pool.AcquireEvent{Waited: true}) },
		"Pool.OnCreate":  func() { hooks.OnCreate(pool.CreateEvent{}) },
		"Limiter.OnWait": func() { lm.OnWait(func(time.Duration, error) { exit() })(time.Second, nil) },
	}
	for name, call := range cases {
		runs.Store(0)
		returned := make(chan bool, 1)
		go func() {
			ok := false
			defer func() { returned <- ok }()
			call()
			ok = true
		}()
		if <-returned {
			t.Errorf("%s: the user's Goexit did not go on", name)
		}
		if n := runs.Load(); n != 1 {
			t.Errorf("%s: the user's hook ran %d times, want 1", name, n)
		}
	}
}
