package ctxsyncotel_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestOTel16CountingSeriesBoundedUnderNewNames: ObserveWatch and
// ObserveAdaptiveLimiter kept, for every name ever observed, the counts of
// its series for as long as the MeterProvider lived: a program that
// observes and unregisters a Watch under a name of its own each time (a
// name per tenant, per request, per reload) grew by some hundreds of bytes
// per Observe and Unregister pair, without bound. The right behaviour: once
// the package has kept the counts of as many ended names as it may (see
// ObserveWatch), a further pair under a new name costs nothing that stays.
func TestOTel16CountingSeriesBoundedUnderNewNames(t *testing.T) {
	const warm, n = 4096, 20000
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	opt := ctxsyncotel.WithMeterProvider(mp)
	w := ctxsync.NewWatch(0)
	l := &shedSource{shed: 1}
	for _, fn := range []struct {
		name    string
		observe func(name string) error
	}{
		{"ObserveWatch", func(name string) error {
			reg, err := ctxsyncotel.ObserveWatch(name, w, opt)
			if err != nil {
				return err
			}
			return reg.Unregister()
		}},
		{"ObserveAdaptiveLimiter", func(name string) error {
			reg, err := ctxsyncotel.ObserveAdaptiveLimiter(name, l, opt)
			if err != nil {
				return err
			}
			return reg.Unregister()
		}},
	} {
		t.Run(fn.name, func(t *testing.T) {
			heap := func() int64 {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				return int64(ms.HeapAlloc)
			}
			for i := range warm {
				if err := fn.observe("warm" + strconv.Itoa(i)); err != nil {
					t.Fatal(err)
				}
			}
			before := heap()
			for i := range n {
				if err := fn.observe("n" + strconv.Itoa(i)); err != nil {
					t.Fatal(err)
				}
			}
			per := (heap() - before) / n
			if per > 32 {
				t.Errorf("%d bytes kept per Observe and Unregister pair under a name of its own (%d pairs), want none", per, n)
			}
		})
	}
}
