package ctxsyncotel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/metric/noop"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

// TestNoopProvider: with the noop MeterProvider everything works; a
// registration unregistered twice frees its PoolMetrics once, and not
// again once another Observe is in force.
func TestNoopProvider(t *testing.T) {
	opt := ctxsyncotel.WithMeterProvider(noop.NewMeterProvider())
	m, err := ctxsyncotel.NewPoolMetrics("p", opt)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(pool.Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 1, Hooks: m.Hooks(pool.Hooks{})})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	reg, err := m.Observe(p)
	if err != nil {
		t.Fatal(err)
	}
	_ = reg.Unregister()
	_ = reg.Unregister()
	reg2, err := m.Observe(p)
	if err != nil {
		t.Fatal(err)
	}
	_ = reg.Unregister()
	if _, err := m.Observe(p); err == nil {
		t.Error("second Observe while reg2 in force")
	}
	_ = reg2.Unregister()
}

// TestHooksAllocateNothing: a pool's Acquire and Release with the hooks
// allocate nothing, nor do the hooks of every kind when they record, with
// the SDK.
func TestHooksAllocateNothing(t *testing.T) {
	_, opt := newProvider(t)
	m, _ := ctxsyncotel.NewPoolMetrics("p", opt)
	p, err := pool.New(pool.Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 1, Hooks: m.Hooks(pool.Hooks{OnRelease: func() {}})})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := context.Background()
	r, _ := p.Acquire(ctx)
	r.Release()
	if n := testing.AllocsPerRun(100, func() {
		r, _ := p.Acquire(ctx)
		r.Release()
	}); n != 0 {
		t.Errorf("pool allocs %v", n)
	}
	h := m.Hooks(pool.Hooks{})
	if n := testing.AllocsPerRun(100, func() {
		h.OnAcquire(pool.AcquireEvent{Waited: true, Wait: time.Millisecond})
		h.OnAcquire(pool.AcquireEvent{Waited: true, Wait: time.Millisecond, Err: context.DeadlineExceeded})
		h.OnCreate(pool.CreateEvent{Duration: time.Millisecond})
	}); n != 0 {
		t.Errorf("hook allocs %v", n)
	}
	bm, _ := ctxsyncotel.NewBreakerMetrics("b", opt)
	oc := bm.OnCall(nil)
	sc := bm.OnStateChange(nil)
	lm, _ := ctxsyncotel.NewLimiterMetrics("l", opt)
	ow := lm.OnWait(nil)
	if n := testing.AllocsPerRun(100, func() {
		oc(breaker.CallEvent{Outcome: breaker.Failure, Duration: time.Millisecond})
		sc(breaker.Closed, breaker.Open, breaker.Counts{})
		ow(time.Millisecond, nil)
	}); n != 0 {
		t.Errorf("breaker/limiter allocs %v", n)
	}
}

// TestStateChangeDuringCollection: a collection that finds an open
// breaker's time up moves it to half-open, whose OnStateChange adds to a
// counter of the same Meter within the collection: it neither deadlocks
// nor is lost.
func TestStateChangeDuringCollection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, opt := newProvider(t)
		m, err := ctxsyncotel.NewBreakerMetrics("b", opt)
		if err != nil {
			t.Fatal(err)
		}
		b := breaker.New(breaker.Settings{OnStateChange: m.OnStateChange(nil), OnCall: m.OnCall(nil), FailureThreshold: 1, OpenTimeout: time.Second})
		reg, err := m.Observe(b)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
		_ = b.Execute(context.Background(), func(context.Context) error { return errors.New("x") })
		time.Sleep(2 * time.Second)
		collect(t, r) // the collection that moves it
		c := collect(t, r)
		if got := c.point(t, "ctxsync.breaker.state_changes", state("half-open")); got != 1 {
			t.Errorf("changes to half-open = %d, want 1", got)
		}
		if got := c.point(t, "ctxsync.breaker.state", state("half-open")); got != 1 {
			t.Errorf("state half-open = %d, want 1", got)
		}
	})
}
