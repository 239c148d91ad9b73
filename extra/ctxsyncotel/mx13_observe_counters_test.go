package ctxsyncotel_test

import (
	"testing"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestMX13ObserveWatchPanickedBesideAnother pins a defect of the Observe
// functions that report counters (ObserveWatch, ObserveAdaptiveLimiter):
// they hand the name's counters to the new source before they register its
// callback, and a Meter whose RegisterCallback panicked left them handed
// to a source never read, its registration taken for the one counted: the
// registration in force before, still running, was then taken for an
// earlier one, and reported no value at all. The right behaviour, as when
// the Meter returns an error: the counters are put back, and the
// registration in force goes on reporting its source's count.
func TestMX13ObserveWatchPanickedBesideAnother(t *testing.T) {
	r, p := newPanickingProvider(t)
	opt := ctxsyncotel.WithMeterProvider(p)
	w1, w2 := ctxsync.NewWatch(0), ctxsync.NewWatch(0)
	w1.Store(1)
	w1.Store(2) // version 3
	reg, err := ctxsyncotel.ObserveWatch("config", w1, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	shed := &shedSource{shed: 4}
	areg, err := ctxsyncotel.ObserveAdaptiveLimiter("adaptive", shed, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer areg.Unregister()
	p.panics = true
	mustPanic(t, "ObserveWatch", func() { _, _ = ctxsyncotel.ObserveWatch("config", w2, opt) })
	mustPanic(t, "ObserveAdaptiveLimiter", func() {
		_, _ = ctxsyncotel.ObserveAdaptiveLimiter("adaptive", &shedSource{shed: 1}, opt)
	})
	p.panics = false
	c := collect(t, r)
	if c.points("ctxsync.watch.version") != 1 {
		t.Fatalf("ctxsync.watch.version has %d points, want 1: the registration in force reports nothing", c.points("ctxsync.watch.version"))
	}
	if got := c.point(t, "ctxsync.watch.version", ctxsyncotel.WatchNameKey.String("config")); got != 3 {
		t.Errorf("ctxsync.watch.version = %d, want 3", got)
	}
	if c.points("ctxsync.adaptive.shed") != 1 {
		t.Fatalf("ctxsync.adaptive.shed has %d points, want 1: the registration in force reports nothing", c.points("ctxsync.adaptive.shed"))
	}
	if got := c.point(t, "ctxsync.adaptive.shed", ctxsyncotel.AdaptiveNameKey.String("adaptive")); got != 4 {
		t.Errorf("ctxsync.adaptive.shed = %d, want 4", got)
	}
}
