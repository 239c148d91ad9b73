package ctxsyncotel_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestReviewFx13b_FailedObserveAfterTheOneBeforeEndedLeavesTheOldestReporting
// pins a defect: under one series, X then A are in force (A reports); an
// ObserveSemaphore B begins (B would report), and while its registration is
// under way A ends, then B's registration fails. The failed Observe put the
// series back to the registration that reported before it, A, which had
// ended meanwhile: X, still in force, reported nothing from then on, and
// the semaphore vanished from the export. The newest registration in force
// must report: X.
func TestReviewFx13b_FailedObserveAfterTheOneBeforeEndedLeavesTheOldestReporting(t *testing.T) {
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	p := &refusingProvider{MeterProvider: sdk}
	opt := ctxsyncotel.WithMeterProvider(p)
	sx, sa, sb := ctxsync.NewSemaphore(3), ctxsync.NewSemaphore(5), ctxsync.NewSemaphore(7)
	x, err := ctxsyncotel.ObserveSemaphore("s", sx, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Unregister()
	var a metric.Registration
	if a, err = ctxsyncotel.ObserveSemaphore("s", sa, opt); err != nil {
		t.Fatal(err)
	}
	p.refuse = true
	p.during = func() {
		if err := a.Unregister(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ctxsyncotel.ObserveSemaphore("s", sb, opt); err == nil {
		t.Fatal("ObserveSemaphore with a refusing Meter succeeded")
	}
	c := collect(t, r)
	if n := c.points("ctxsync.semaphore.available"); n != 1 {
		t.Fatalf("ctxsync.semaphore.available has %d points, want 1 (X's, the one in force)", n)
	}
	if got := c.point(t, "ctxsync.semaphore.available", ctxsyncotel.SemaphoreNameKey.String("s")); got != 3 {
		t.Errorf("ctxsync.semaphore.available = %d, want 3 (X's)", got)
	}
}
