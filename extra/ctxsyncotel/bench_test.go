package ctxsyncotel_test

import (
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

// The cost of each hook alone, on the SDK (bench/otel_test.go has the cost
// in the pool, beside the pool without hooks).
func BenchmarkHooks(b *testing.B) {
	_, mp := newProvider(b)
	pm, _ := ctxsyncotel.NewPoolMetrics("db", mp)
	bm, _ := ctxsyncotel.NewBreakerMetrics("b", mp)
	lm, _ := ctxsyncotel.NewLimiterMetrics("l", mp)
	ph := pm.Hooks(pool.Hooks{})
	onCall := bm.OnCall(nil)
	// Made with no name: each event's own name, its options found in the
	// cache of names.
	ownPM, _ := ctxsyncotel.NewPoolMetrics("", mp)
	ownBM, _ := ctxsyncotel.NewBreakerMetrics("", mp)
	ownPH := ownPM.Hooks(pool.Hooks{})
	ownOnCall := ownBM.OnCall(nil)
	onWait := lm.OnWait(nil)
	for _, bc := range []struct {
		name string
		f    func()
	}{
		{"hook=pool.OnAcquire/waited=false", func() { ph.OnAcquire(pool.AcquireEvent{}) }},
		{"hook=pool.OnAcquire/waited=true", func() { ph.OnAcquire(pool.AcquireEvent{Waited: true, Wait: time.Millisecond}) }},
		{"hook=breaker.OnCall/outcome=success", func() {
			onCall(breaker.CallEvent{Outcome: breaker.Success, State: breaker.Closed, Duration: time.Millisecond})
		}},
		{"hook=breaker.OnCall/outcome=rejected", func() { onCall(breaker.CallEvent{Outcome: breaker.Rejected, State: breaker.Open}) }},
		{"hook=ratelimit.OnWait", func() { onWait(time.Millisecond, nil) }},
		{"hook=pool.OnAcquire/waited=false/name=own", func() { ownPH.OnAcquire(pool.AcquireEvent{Name: "db"}) }},
		{"hook=pool.OnAcquire/waited=true/name=own", func() {
			ownPH.OnAcquire(pool.AcquireEvent{Name: "db", Waited: true, Wait: time.Millisecond})
		}},
		{"hook=breaker.OnCall/outcome=success/name=own", func() {
			ownOnCall(breaker.CallEvent{Name: "b", Outcome: breaker.Success, State: breaker.Closed, Duration: time.Millisecond})
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.f()
			}
		})
	}
}
