package ctxsyncotel_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

// brokenProvider gives Meters whose synchronous instruments panic, or call
// runtime.Goexit, at each measurement: an SDK with a bug, or a provider of
// the user's own.
type brokenProvider struct {
	noop.MeterProvider
	goexit bool
}

func (p brokenProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return brokenMeter{goexit: p.goexit}
}

type brokenMeter struct {
	noop.Meter
	goexit bool
}

func (m brokenMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return brokenHistogram{goexit: m.goexit}, nil
}

func (m brokenMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return brokenCounter{goexit: m.goexit}, nil
}

type brokenHistogram struct {
	noop.Float64Histogram
	goexit bool
}

func (h brokenHistogram) Record(context.Context, float64, ...metric.RecordOption) {
	breakDown(h.goexit)
}

type brokenCounter struct {
	noop.Int64Counter
	goexit bool
}

func (c brokenCounter) Add(context.Context, int64, ...metric.AddOption) { breakDown(c.goexit) }

const meterPanic = "the meter's panic"

func breakDown(goexit bool) {
	if goexit {
		runtime.Goexit()
	}
	panic(meterPanic)
}

// inGoroutine runs f in a goroutine of its own, and tells how it ended: with
// the value of a panic, or by runtime.Goexit.
func inGoroutine(f func()) (panicked any, exited bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		exited = true
		defer func() { panicked = recover() }()
		f()
		exited = false
	}()
	<-done
	return panicked, exited && panicked == nil
}

// TestMX13UserHookRunsWhenMetricsPanic pins a defect of every hook that
// wraps the user's own (PoolMetrics.Hooks, BreakerMetrics.OnCall and
// OnStateChange, LimiterMetrics.OnWait): ours ran first, and when it
// panicked or called runtime.Goexit (a Meter that breaks down, or metrics
// made with no name told of a pool or breaker with none) the user's hook
// was skipped, so that a program counting its own events lost one. The
// right behaviour: the user's hook runs exactly once, whatever ours does,
// and then ours's panic (or Goexit) goes on to the caller.
func TestMX13UserHookRunsWhenMetricsPanic(t *testing.T) {
	type hookCase struct {
		name string
		// make returns the hook to call, the user's own wrapped, which
		// adds one to *calls at each call.
		make func(t *testing.T, opt ctxsyncotel.Option, calls *int) func()
		// named: the case needs a working Meter (it breaks down on a
		// missing name, not on the Meter).
		unnamed bool
	}
	cases := []hookCase{
		{name: "Pool.OnAcquire waited", make: func(t *testing.T, opt ctxsyncotel.Option, calls *int) func() {
			m, err := ctxsyncotel.NewPoolMetrics("db", opt)
			if err != nil {
				t.Fatal(err)
			}
			h := m.Hooks(pool.Hooks{OnAcquire: func(pool.AcquireEvent) { *calls++ }})
			return func() { h.OnAcquire(pool.AcquireEvent{Name: "db", Waited: true, Wait: time.Millisecond}) }
		}},
		{name: "Pool.OnAcquire timed out", make: func(t *testing.T, opt ctxsyncotel.Option, calls *int) func() {
			m, err := ctxsyncotel.NewPoolMetrics("db", opt)
			if err != nil {
				t.Fatal(err)
			}
			h := m.Hooks(pool.Hooks{OnAcquire: func(pool.AcquireEvent) { *calls++ }})
			return func() { h.OnAcquire(pool.AcquireEvent{Name: "db", Err: context.DeadlineExceeded}) }
		}},
		{name: "Pool.OnCreate", make: func(t *testing.T, opt ctxsyncotel.Option, calls *int) func() {
			m, err := ctxsyncotel.NewPoolMetrics("db", opt)
			if err != nil {
				t.Fatal(err)
			}
			h := m.Hooks(pool.Hooks{OnCreate: func(pool.CreateEvent) { *calls++ }})
			return func() { h.OnCreate(pool.CreateEvent{Name: "db", Duration: time.Millisecond}) }
		}},
		{name: "Breaker.OnCall", make: func(t *testing.T, opt ctxsyncotel.Option, calls *int) func() {
			m, err := ctxsyncotel.NewBreakerMetrics("b", opt)
			if err != nil {
				t.Fatal(err)
			}
			on := m.OnCall(func(breaker.CallEvent) { *calls++ })
			return func() { on(breaker.CallEvent{Name: "b", Outcome: breaker.Success, Duration: time.Millisecond}) }
		}},
		{name: "Breaker.OnStateChange", make: func(t *testing.T, opt ctxsyncotel.Option, calls *int) func() {
			m, err := ctxsyncotel.NewBreakerMetrics("b", opt)
			if err != nil {
				t.Fatal(err)
			}
			on := m.OnStateChange(func(_, _ breaker.State, _ breaker.Counts) { *calls++ })
			return func() { on(breaker.Closed, breaker.Open, breaker.Counts{}) }
		}},
		{name: "Limiter.OnWait", make: func(t *testing.T, opt ctxsyncotel.Option, calls *int) func() {
			m, err := ctxsyncotel.NewLimiterMetrics("api", opt)
			if err != nil {
				t.Fatal(err)
			}
			on := m.OnWait(func(time.Duration, error) { *calls++ })
			return func() { on(time.Millisecond, nil) }
		}},
		{name: "unnamed Pool.OnAcquire", unnamed: true, make: func(t *testing.T, opt ctxsyncotel.Option, calls *int) func() {
			m, err := ctxsyncotel.NewPoolMetrics("", opt)
			if err != nil {
				t.Fatal(err)
			}
			h := m.Hooks(pool.Hooks{OnAcquire: func(pool.AcquireEvent) { *calls++ }})
			return func() { h.OnAcquire(pool.AcquireEvent{Waited: true}) }
		}},
		{name: "unnamed Breaker.OnCall", unnamed: true, make: func(t *testing.T, opt ctxsyncotel.Option, calls *int) func() {
			m, err := ctxsyncotel.NewBreakerMetrics("", opt)
			if err != nil {
				t.Fatal(err)
			}
			on := m.OnCall(func(breaker.CallEvent) { *calls++ })
			return func() { on(breaker.CallEvent{Outcome: breaker.Success}) }
		}},
	}
	for _, tc := range cases {
		for _, goexit := range []bool{false, true} {
			if tc.unnamed && goexit {
				continue // a missing name panics; it never calls Goexit
			}
			name := tc.name + "/panic"
			if goexit {
				name = tc.name + "/goexit"
			}
			t.Run(name, func(t *testing.T) {
				opt := ctxsyncotel.WithMeterProvider(brokenProvider{goexit: goexit})
				if tc.unnamed {
					_, opt = newProvider(t)
				}
				calls := 0
				hook := tc.make(t, opt, &calls)
				panicked, exited := inGoroutine(hook)
				if calls != 1 {
					t.Errorf("the user's hook ran %d times, want 1", calls)
				}
				switch {
				case goexit && !exited:
					t.Errorf("the hook ended with panic %v, want the meter's Goexit to go on", panicked)
				case !goexit && panicked == nil:
					t.Errorf("the hook's panic was lost (Goexit %v), want it to reach the caller", exited)
				case !tc.unnamed && !goexit && panicked != meterPanic:
					t.Errorf("the hook panicked with %v, want %q", panicked, meterPanic)
				}
			})
		}
	}
}
