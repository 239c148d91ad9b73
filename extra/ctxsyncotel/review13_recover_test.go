package ctxsyncotel_test

import (
	"testing"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

// The user's hook runs after the metrics code, deferred, so that it runs
// even when ours panics. Deferred as it was, a call of recover in the user's
// hook itself (a hook that guards against its own panics that way) was a
// call by a deferred function, and took the metrics' panic: the caller never
// saw it, and the hook went on as if its own code had panicked. Right: the
// metrics' panic reaches the caller whatever the user's hook does.
func TestReview13UserRecoverDoesNotTakeTheMetricsPanic(t *testing.T) {
	bm, err := ctxsyncotel.NewBreakerMetrics("") // no name: panics at the first call
	if err != nil {
		t.Fatal(err)
	}
	pm, err := ctxsyncotel.NewPoolMetrics("")
	if err != nil {
		t.Fatal(err)
	}
	hooks := pm.Hooks(pool.Hooks{
		OnAcquire: func(pool.AcquireEvent) { _ = recover() },
		OnCreate:  func(pool.CreateEvent) { _ = recover() },
	})
	cases := map[string]func(){
		"Breaker.OnCall": func() {
			bm.OnCall(func(breaker.CallEvent) { _ = recover() })(breaker.CallEvent{Outcome: breaker.Success})
		},
		"Pool.OnAcquire": func() { hooks.OnAcquire(pool.AcquireEvent{Waited: true}) },
		"Pool.OnCreate":  func() { hooks.OnCreate(pool.CreateEvent{}) },
	}
	for name, call := range cases {
		if !panics(call) {
			t.Errorf("%s: the metrics' panic was taken by the user's hook", name)
		}
	}
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}
