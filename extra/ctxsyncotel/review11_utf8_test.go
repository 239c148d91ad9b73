package ctxsyncotel_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

// TestReview11NamesMustBeUTF8 pins a defect: a name that is not UTF-8 was
// taken as the value of a name attribute, by every constructor and Observe
// function and by the hooks of metrics made with no name. OTLP carries
// attribute values as protobuf strings, which must be UTF-8: the exporter
// fails to encode the request, and with it every metric of the process in
// that export. ctxsyncprom refuses such a name where it is given. The right
// behaviour: each constructor and Observe function returns an error naming
// the package, and the hooks of metrics made with no name panic with a
// message that says so, as they do for a source with no name.
func TestReview11NamesMustBeUTF8(t *testing.T) {
	_, mp := newProvider(t)
	const bad = "db\xff"
	fail := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s with a name that is not UTF-8: err = nil", what)
		} else if !strings.HasPrefix(err.Error(), "ctxsyncotel: ") {
			t.Errorf("%s: err = %q, want it to name the package", what, err)
		}
	}
	_, err := ctxsyncotel.NewPoolMetrics(bad, mp)
	fail("NewPoolMetrics", err)
	_, err = ctxsyncotel.NewBreakerMetrics(bad, mp)
	fail("NewBreakerMetrics", err)
	_, err = ctxsyncotel.NewLimiterMetrics(bad, mp)
	fail("NewLimiterMetrics", err)
	_, err = ctxsyncotel.ObserveSemaphore(bad, ctxsync.NewSemaphore(1), mp)
	fail("ObserveSemaphore", err)
	_, err = ctxsyncotel.ObserveWeighted(bad, ctxsync.NewWeighted(1), mp)
	fail("ObserveWeighted", err)
	_, err = ctxsyncotel.ObserveQueue(bad, ctxsync.NewQueue[int](0), mp)
	fail("ObserveQueue", err)
	_, err = ctxsyncotel.ObserveLock(bad, ctxsync.NewLock(), mp)
	fail("ObserveLock", err)
	_, err = ctxsyncotel.ObserveFlight(bad, &ctxsync.Flight[string, int]{}, mp)
	fail("ObserveFlight", err)
	_, err = ctxsyncotel.ObserveKeyedLock(bad, &ctxsync.KeyedLock[string]{}, mp)
	fail("ObserveKeyedLock", err)
	_, err = ctxsyncotel.ObserveWaitGroup(bad, &ctxsync.WaitGroup{}, mp)
	fail("ObserveWaitGroup", err)
	_, err = ctxsyncotel.ObserveWatch(bad, ctxsync.NewWatch(0), mp)
	fail("ObserveWatch", err)
	_, err = ctxsyncotel.ObserveAdaptiveLimiter(bad, adaptive.New(adaptive.Config{}), mp)
	fail("ObserveAdaptiveLimiter", err)

	// Metrics made with no name, of a source whose own name is not UTF-8.
	pm, err := ctxsyncotel.NewPoolMetrics("", mp)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pm.Observe(newOwnNamedPool(t, bad, pool.Hooks{}))
	fail("PoolMetrics.Observe of a pool named so", err)
	bm, err := ctxsyncotel.NewBreakerMetrics("", mp)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bm.Observe(breaker.New(breaker.Settings{Name: bad}))
	fail("BreakerMetrics.Observe of a breaker named so", err)

	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			t.Helper()
			r := recover()
			if r == nil {
				t.Errorf("%s told of a name that is not UTF-8: no panic", what)
			} else if msg := fmt.Sprint(r); !strings.HasPrefix(msg, "ctxsyncotel: ") || !strings.Contains(msg, "UTF-8") {
				t.Errorf("%s: panic %q, want one that names the package and says UTF-8", what, msg)
			}
		}()
		f()
	}
	hooks := pm.Hooks(pool.Hooks{})
	mustPanic("PoolMetrics.Hooks' OnAcquire", func() { hooks.OnAcquire(pool.AcquireEvent{Name: bad}) })
	onCall := bm.OnCall(nil)
	mustPanic("BreakerMetrics.OnCall", func() { onCall(breaker.CallEvent{Name: bad}) })
}
