package ctxsyncotel

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
)

// hookProvider is one of providers whose Meters are one SDK Meter, as the
// global provider and the one it delegates to are. Its Meter runs, in a
// RegisterCallback, the next of the hooks given to it, before the SDK's,
// and gives the error the hook returns instead; and in the Unregister of a
// registration it made, the hook the registration was given, before the
// SDK's.
type hookProvider struct {
	metric.MeterProvider
	meter *hookMeter
}

func (p *hookProvider) Meter(string, ...metric.MeterOption) metric.Meter { return p.meter }

type hookMeter struct {
	metric.Meter
	mu         sync.Mutex
	onRegister []func() error // run by the RegisterCallback calls, in turn
	onUnreg    map[int]func() // by the number of the RegisterCallback call
	calls      int
}

func (m *hookMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	m.mu.Lock()
	n := m.calls
	m.calls++
	var hook func() error
	if len(m.onRegister) > 0 {
		hook, m.onRegister = m.onRegister[0], m.onRegister[1:]
	}
	m.mu.Unlock()
	if hook != nil {
		if err := hook(); err != nil {
			return nil, err
		}
	}
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err != nil {
		return nil, err
	}
	return &hookRegistration{Registration: reg, m: m, n: n}, nil
}

type hookRegistration struct {
	metric.Registration
	m *hookMeter
	n int
}

func (r *hookRegistration) Unregister() error {
	r.m.mu.Lock()
	hook := r.m.onUnreg[r.n]
	delete(r.m.onUnreg, r.n)
	r.m.mu.Unlock()
	if hook != nil {
		hook()
	}
	return r.Registration.Unregister()
}

// semaphoresReported collects r and returns the values of
// ctxsync.semaphore.available.
func semaphoresReported(t *testing.T, r *sdkmetric.ManualReader) []int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "ctxsync.semaphore.available" {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				got = append(got, p.Value)
			}
		}
	}
	return got
}

// TestRV16cMergeIntoRetiringSeriesReported: the series of the global
// provider has an Observe under way whose carrier's Observe failed (the
// Meter refused it), and the delegate's series is retiring its carrier, its
// last registration ended, when the package merges the two (as it learns
// the delegate, from another goroutine). The Observe under way joins the
// delegate's series before the retire is over. It joined as a registration
// reported by the retiring carrier, which the retire then took away: the
// registration was in force and reported by no callback, for good. The
// right behaviour: it is reported until it ends.
func TestRV16cMergeIntoRetiringSeriesReported(t *testing.T) {
	var tb seriesCounters
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	meter := &hookMeter{Meter: scopeMeter(sdk), onUnreg: map[int]func(){}}
	global, delegate := &hookProvider{sdk, meter}, &hookProvider{sdk, meter}

	// X, through the delegate: the delegate's series, X its carrier
	// (RegisterCallback call 0).
	x, err := observeSemaphoreIn(&tb, ctxsync.NewSemaphore(5), delegate)
	if err != nil {
		t.Fatal(err)
	}
	// A, through the global provider, the carrier of its series (call 1):
	// while its RegisterCallback runs, B arrives under the series (call 2)
	// and waits in its own; then the Meter refuses A. B is under way, and
	// the series has no carrier.
	bArrived, releaseB, bDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var b metric.Registration
	var bErr error
	meter.onRegister = []func() error{
		func() error {
			go func() {
				defer close(bDone)
				b, bErr = observeSemaphoreIn(&tb, ctxsync.NewSemaphore(7), global)
			}()
			<-bArrived
			return errors.New("refused")
		},
		func() error {
			close(bArrived)
			<-releaseB
			return nil
		},
	}
	if _, err := observeSemaphoreIn(&tb, ctxsync.NewSemaphore(3), global); err == nil {
		t.Fatal("the Observe the Meter refused succeeded")
	}
	// X ends: the delegate's series retires X's callback. As the Meter
	// unregisters it, the package merges the global provider's series into
	// the delegate's, and B's Observe ends.
	meter.onUnreg[0] = func() {
		tb.mu.Lock()
		tb.moveLocked(sourceOf(global), sourceOf(delegate))
		tb.mu.Unlock()
		close(releaseB)
		<-bDone
	}
	if err := x.Unregister(); err != nil {
		t.Fatal(err)
	}
	if bErr != nil {
		t.Fatal(bErr)
	}
	defer b.Unregister()
	if got := semaphoresReported(t, r); len(got) != 1 || got[0] != 7 {
		t.Errorf("ctxsync.semaphore.available %v with B in force, want [7]", got)
	}
}

// TestRV16cMergedSeriesKeepNothing: Watches observed under names of their
// own through two providers that give one Meter, their series merged (as
// the global provider's are into its delegate's), and then unregistered,
// over and over: once the table keeps as many ended series as it may, a
// further round keeps nothing, neither the series merged away, nor their
// registrations or callbacks.
func TestRV16cMergedSeriesKeepNothing(t *testing.T) {
	const warm, n = 5000, 20000
	var tb seriesCounters
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer sdk.Shutdown(context.Background())
	var live atomic.Int64
	meter := &twinMeter{Meter: scopeMeter(sdk), live: &live}
	round := func() {
		a, b := &twinProvider{sdk, meter}, &twinProvider{sdk, meter}
		ra, err := observeWatchIn(&tb, ctxsync.NewWatch(0), a)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := observeWatchIn(&tb, ctxsync.NewWatch(0), b)
		if err != nil {
			t.Fatal(err)
		}
		tb.mu.Lock()
		tb.moveLocked(sourceOf(a), sourceOf(b))
		tb.mu.Unlock()
		if err := errors.Join(ra.Unregister(), rb.Unregister()); err != nil {
			t.Fatal(err)
		}
	}
	heap := func() int64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	for range warm {
		round()
	}
	before := heap()
	for range n {
		round()
	}
	if per := (heap() - before) / n; per > 32 {
		t.Errorf("%d bytes kept per round of two Observes, a merge and two Unregisters (%d rounds), want none", per, n)
	}
	if l := live.Load(); l != 0 {
		t.Errorf("%d callbacks left registered with the Meter, want none", l)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.ended.Len() > max(tb.peak, endedKept) {
		t.Errorf("%d ended series kept, want at most %d", tb.ended.Len(), max(tb.peak, endedKept))
	}
}

// TestRV16cMergeStaleReadNotApplied: a collection of one reader reads the
// Watch of the global provider's series, and stalls before it applies the
// read; meanwhile the package merges that series into the delegate's (a
// callback of another reader's collection learns the delegate), the Watch
// moves on, and the other reader's collection reads and applies it. The
// stalled read, applied then, was numbered by the merged-away series and
// checked against the numbers of the series it was merged into: where the
// two happened to line up, it passed for a read that overlapped no other,
// its older, smaller count for a reset, and the counter added the newer
// count a second time. The right behaviour: a read begun before a merge and
// applied after it moves nothing; the counter never counts more than the
// versions of the Watches.
func TestRV16cMergeStaleReadNotApplied(t *testing.T) {
	var tb seriesCounters
	sdk := sdkmetric.NewMeterProvider()
	defer sdk.Shutdown(context.Background())
	var live atomic.Int64
	meter := &twinMeter{Meter: scopeMeter(sdk), live: &live}
	global, delegate := &twinProvider{sdk, meter}, &twinProvider{sdk, meter}
	wp, wg := watchAt(3), watchAt(5)
	rp, err := observeWatchIn(&tb, wp, delegate)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Unregister()
	rg, err := observeWatchIn(&tb, wg, global) // the newest: counted once merged
	if err != nil {
		t.Fatal(err)
	}
	defer rg.Unregister()
	g, tok := rg.(*seriesRegistration).counts, rg.(*seriesRegistration).token
	p := rp.(*seriesRegistration).counts
	// The reads numbered so far by each series (any history will do): the
	// two line up so that the stalled read's number follows the other
	// reader's.
	p.seq.Store(4)
	g.seq.Store(5)
	stalled := g.start()
	old := []int64{int64(wg.Version())}
	tb.mu.Lock()
	tb.moveLocked(sourceOf(global), sourceOf(delegate))
	tb.mu.Unlock()
	wg.Store(1)
	read := func() int64 {
		seq := g.start()
		v := []int64{int64(wg.Version())}
		g.applyFrom(tok, seq, v)
		return v[0]
	}
	if got := read(); got != 6 {
		t.Fatalf("version %d at the first read after the merge, want 6", got)
	}
	g.applyFrom(tok, stalled, old)
	if got, bound := read(), int64(wg.Version()+wp.Version()); got > bound {
		t.Errorf("version %d once the stalled read was applied, above %d, the versions of the two Watches", got, bound)
	}
}
