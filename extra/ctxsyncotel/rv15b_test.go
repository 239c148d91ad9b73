package ctxsyncotel_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// stepProvider gives Meters whose registrations' Unregister does, in turn,
// what unregister says for each call (nil: the SDK's Unregister): "refuse"
// returns an error before the SDK's, "panic" panics and "goexit" calls
// runtime.Goexit before it. It counts the callbacks registered with the SDK
// and not yet unregistered from it.
type stepProvider struct {
	metric.MeterProvider
	mu         sync.Mutex
	live       int
	unregister []string
}

var errUnregisterRefused = errors.New("unregister refused")

func (p *stepProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &stepMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

func (p *stepProvider) callbacks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live
}

func (p *stepProvider) next() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.unregister) == 0 {
		return ""
	}
	s := p.unregister[0]
	p.unregister = p.unregister[1:]
	return s
}

type stepMeter struct {
	metric.Meter
	p *stepProvider
}

func (m *stepMeter) RegisterCallback(f metric.Callback, insts ...metric.Observable) (metric.Registration, error) {
	reg, err := m.Meter.RegisterCallback(f, insts...)
	if err != nil {
		return nil, err
	}
	m.p.mu.Lock()
	m.p.live++
	m.p.mu.Unlock()
	return &stepRegistration{Registration: reg, p: m.p}, nil
}

type stepRegistration struct {
	metric.Registration
	p    *stepProvider
	done bool
}

func (r *stepRegistration) Unregister() error {
	switch r.p.next() {
	case "refuse":
		return errUnregisterRefused
	case "panic":
		panic(meterPanic)
	case "goexit":
		runtime.Goexit()
	}
	if err := r.Registration.Unregister(); err != nil {
		return err
	}
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if !r.done {
		r.done = true
		r.p.live--
	}
	return nil
}

func newStepProvider(t *testing.T) (*sdkmetric.ManualReader, *stepProvider, ctxsyncotel.Option) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	p := &stepProvider{MeterProvider: sdk}
	return r, p, ctxsyncotel.WithMeterProvider(p)
}

// unregisterIn calls reg.Unregister in a goroutine of its own, and returns
// the value it panicked with, whether it called runtime.Goexit, and its
// error.
func unregisterIn(reg metric.Registration) (panicked any, exited bool, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		exited = true
		defer func() { panicked = recover() }()
		err = reg.Unregister()
		exited = false
	}()
	<-done
	if panicked != nil {
		exited = false
	}
	return panicked, exited, err
}

// TestRV15bUnregisterRefusedIsRetried: the Meter refuses, panics or calls
// runtime.Goexit in the Unregister of a callback at the last registration's
// Unregister (its own callback, or the one that reported the series for
// it): that Unregister fails, the series is reported by none, or once by a
// new registration under it, and the next Unregister unregisters what is
// left, so that no callback stays registered with the Meter. A second
// Unregister did nothing, and the callback stayed registered for good.
func TestRV15bUnregisterRefusedIsRetried(t *testing.T) {
	for _, how := range []string{"refuse", "panic", "goexit"} {
		for _, mode := range []string{"alone", "own", "carrier"} {
			what := how + "/" + mode
			r, p, opt := newStepProvider(t)
			b, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt)
			if err != nil {
				t.Fatal(err)
			}
			switch mode {
			case "alone":
				// b's Unregister unregisters its callback, the carrier.
				p.unregister = []string{how}
			default:
				// x's callback reports the series for b once x ended;
				// b's Unregister unregisters its own, then x's.
				x := b
				if b, err = ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt); err != nil {
					t.Fatal(err)
				}
				if err := x.Unregister(); err != nil {
					t.Fatal(err)
				}
				wantSemaphore(t, r, what+": x ended", 7)
				if mode == "own" {
					p.unregister = []string{how}
				} else {
					p.unregister = []string{"", how}
				}
			}
			v, exited, err := unregisterIn(b)
			switch how {
			case "refuse":
				if !errors.Is(err, errUnregisterRefused) {
					t.Errorf("%s: Unregister = %v, want the Meter's error", what, err)
				}
			case "panic":
				if v != meterPanic {
					t.Errorf("%s: Unregister panicked with %v, want the Meter's panic", what, v)
				}
			case "goexit":
				if !exited {
					t.Errorf("%s: Unregister did not call runtime.Goexit", what)
				}
			}
			wantSemaphore(t, r, what+": all ended", 0)
			n, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(9), opt)
			if err != nil {
				t.Fatal(err)
			}
			wantSemaphore(t, r, what+": a new one, the old callback left registered", 9)
			if err := b.Unregister(); err != nil {
				t.Errorf("%s: second Unregister: %v", what, err)
			}
			wantSemaphore(t, r, what+": a new one, the old callback unregistered", 9)
			if err := n.Unregister(); err != nil {
				t.Fatal(err)
			}
			if c := p.callbacks(); c != 0 {
				t.Errorf("%s: %d callbacks left registered with the Meter after a second Unregister", what, c)
			}
			if err := b.Unregister(); err != nil {
				t.Errorf("%s: third Unregister: %v", what, err)
			}
			wantSemaphore(t, r, what+": all ended, retried", 0)
		}
	}
}

// TestRV15bObserveWatchUnregisterRefusedIsRetried: as above, for a series
// with a counter: the Watch's registration refused at its Unregister is
// retried by the next, and the counter carries on under a new one.
func TestRV15bObserveWatchUnregisterRefusedIsRetried(t *testing.T) {
	r, p, opt := newStepProvider(t)
	w := ctxsync.NewWatch(0)
	w.Store(1) // version 2
	reg, err := ctxsyncotel.ObserveWatch("w", w, opt)
	if err != nil {
		t.Fatal(err)
	}
	version := func() (int64, bool) {
		return exactPoint(collect(t, r), "ctxsync.watch.version", attribute.NewSet(ctxsyncotel.WatchNameKey.String("w")))
	}
	if v, ok := version(); !ok || v != 2 {
		t.Fatalf("version = %d (reported %v), want 2", v, ok)
	}
	p.unregister = []string{"refuse"}
	if err := reg.Unregister(); !errors.Is(err, errUnregisterRefused) {
		t.Fatalf("Unregister = %v, want the Meter's error", err)
	}
	if v, ok := version(); ok {
		t.Errorf("version reported (%d) with no registration in force", v)
	}
	again, err := ctxsyncotel.ObserveWatch("w", w, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Unregister()
	if v, ok := version(); !ok || v != 2 {
		t.Errorf("version = %d (reported %v), want 2: the same Watch carries on, counted once", v, ok)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatalf("second Unregister: %v", err)
	}
	if c := p.callbacks(); c != 1 {
		t.Errorf("%d callbacks registered with the Meter, want 1 (the new registration's)", c)
	}
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var all [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int(nil), p[:i]...), n-1), p[i:]...)
			all = append(all, q)
		}
	}
	return all
}

// TestRV15bEndInEveryOrder: four registrations under one series, the first
// of them (whose callback reports the series) included, end in each of the
// 24 orders, each Unregister called twice: after each, the series shows the
// newest registration left, once, or nothing; the Watch's counter never
// falls and never counts more than its Watches' versions; no callback is
// left registered with the Meter.
func TestRV15bEndInEveryOrder(t *testing.T) {
	for _, order := range permutations(4) {
		r, p, opt := newStepProvider(t)
		var sems, watches [4]metric.Registration
		var ws [4]*ctxsync.Watch[int]
		for i := range 4 {
			var err error
			if sems[i], err = ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(10+i), opt); err != nil {
				t.Fatal(err)
			}
			ws[i] = ctxsync.NewWatch(0)
			for range i {
				ws[i].Store(1)
			}
			if watches[i], err = ctxsyncotel.ObserveWatch("w", ws[i], opt); err != nil {
				t.Fatal(err)
			}
		}
		var total int64 = 1 + 2 + 3 + 4 // the versions observed
		ended := [4]bool{}
		var last int64
		set := attribute.NewSet(ctxsyncotel.WatchNameKey.String("w"))
		for step, i := range order {
			for range 2 {
				if err := sems[i].Unregister(); err != nil {
					t.Fatal(err)
				}
				if err := watches[i].Unregister(); err != nil {
					t.Fatal(err)
				}
			}
			ended[i] = true
			// The Watches left in force move on.
			for j := range 4 {
				if !ended[j] {
					ws[j].Store(2)
					total++
				}
			}
			want := int64(0)
			for j := 3; j >= 0; j-- {
				if !ended[j] {
					want = int64(10 + j)
					break
				}
			}
			wantSemaphore(t, r, fmt.Sprintf("order %v, step %d", order, step), want)
			got, ok := exactPoint(collect(t, r), "ctxsync.watch.version", set)
			switch {
			case ok != (want != 0):
				t.Errorf("order %v, step %d: ctxsync.watch.version reported %v, want %v", order, step, ok, want != 0)
			case ok && (got < last || got > total):
				t.Errorf("order %v, step %d: ctxsync.watch.version = %d after %d, want from %d to %d", order, step, got, last, last, total)
			case ok:
				last = got
			}
		}
		if n := p.callbacks(); n != 0 {
			t.Errorf("order %v: %d callbacks left registered with the Meter", order, n)
		}
	}
}

// panickySemaphore is a SemaphoreSource whose Available panics, or calls
// runtime.Goexit, while how says so.
type panickySemaphore struct {
	*ctxsync.Semaphore
	how *string
}

func (s panickySemaphore) Available() int {
	switch *s.how {
	case "panic":
		panic(meterPanic)
	case "goexit":
		runtime.Goexit()
	}
	return s.Semaphore.Available()
}

// panickyWatch is a WatchSource whose Version panics while how says so.
type panickyWatch struct {
	*ctxsync.Watch[int]
	how *string
}

func (w panickyWatch) Version() uint64 {
	if *w.how == "panic" {
		panic(meterPanic)
	}
	return w.Watch.Version()
}

// TestRV15bSourcePanicsAtACollection: a source that panics (or calls
// runtime.Goexit) at a collection, in the reader's goroutine, leaves the
// series whole: the next collection reports it, once, the counter carrying
// on from where it was, and its Unregister leaves no callback.
func TestRV15bSourcePanicsAtACollection(t *testing.T) {
	for _, how := range []string{"panic", "goexit"} {
		r, p, opt := newStepProvider(t)
		var mode string
		s := panickySemaphore{ctxsync.NewSemaphore(5), &mode}
		older, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(3), opt)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := ctxsyncotel.ObserveSemaphore("s", s, opt)
		if err != nil {
			t.Fatal(err)
		}
		w := ctxsync.NewWatch(0)
		w.Store(1)
		wreg, err := ctxsyncotel.ObserveWatch("w", panickyWatch{w, &mode}, opt)
		if err != nil {
			t.Fatal(err)
		}
		version := func() int64 {
			v, _ := exactPoint(collect(t, r), "ctxsync.watch.version", attribute.NewSet(ctxsyncotel.WatchNameKey.String("w")))
			return v
		}
		if v := version(); v != 2 {
			t.Fatalf("%s: version = %d, want 2", how, v)
		}
		mode = how
		v, exited := inGoroutine(func() { collect(t, r) })
		if how == "panic" && v != meterPanic || how == "goexit" && !exited {
			t.Errorf("%s: the collection ended with %v (Goexit %v), want the source's %s", how, v, exited, how)
		}
		mode = ""
		wantSemaphore(t, r, how+": after the source's "+how, 5)
		w.Store(2)
		if v := version(); v != 3 {
			t.Errorf("%s: version = %d after the source's %s, want 3", how, v, how)
		}
		for _, g := range []metric.Registration{reg, wreg} {
			if err := g.Unregister(); err != nil {
				t.Fatal(err)
			}
		}
		wantSemaphore(t, r, how+": the older one again", 3)
		if err := older.Unregister(); err != nil {
			t.Fatal(err)
		}
		if n := p.callbacks(); n != 0 {
			t.Errorf("%s: %d callbacks left registered with the Meter", how, n)
		}
	}
}

// TestRV15bObserveFromTheMetersRegisterCallbackThenRefused: the Meter's
// RegisterCallback of the first Observe under the series makes another
// Observe under it, which succeeds, and then refuses, panics or calls
// runtime.Goexit: the inner registration reports the series, once, and
// once it ends no callback is left registered.
func TestRV15bObserveFromTheMetersRegisterCallbackThenRefused(t *testing.T) {
	errRefusedHere := errors.New("refused")
	for _, how := range []string{"refuse", "panic", "goexit"} {
		r, p, opt := newHookProvider(t)
		var inner metric.Registration
		p.register = func() error {
			var err error
			if inner, err = ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(5), opt); err != nil {
				t.Error(err)
			}
			switch how {
			case "panic":
				panic(meterPanic)
			case "goexit":
				runtime.Goexit()
			}
			return errRefusedHere
		}
		v, exited := inGoroutine(func() {
			if _, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt); !errors.Is(err, errRefusedHere) {
				t.Errorf("%s: ObserveSemaphore = %v, want the Meter's error", how, err)
			}
		})
		if how == "panic" && v != meterPanic || how == "goexit" && !exited || how == "refuse" && (v != nil || exited) {
			t.Errorf("%s: the outer Observe ended with %v (Goexit %v)", how, v, exited)
		}
		if inner == nil {
			t.Fatal("the hook made no registration")
		}
		wantSemaphore(t, r, how+": the inner one in force, the outer failed", 5)
		if err := inner.Unregister(); err != nil {
			t.Fatal(err)
		}
		wantSemaphore(t, r, how+": all ended", 0)
		if c := p.callbacks(); c != 0 {
			t.Errorf("%s: %d callbacks left registered with the Meter after every Unregister", how, c)
		}
	}
}

// FuzzRV15bRefusedUnregisterModel runs a script of ObserveSemaphore calls,
// Unregisters the Meter refuses (the registration's own callback, or the
// one that reported the series for it) or lets through, second Unregisters
// and collections on two series, and checks each collection against a
// model: a series is reported, once, with the value of the newest
// registration in force, and not at all with none. At the end, every
// ended registration's Unregister called once more leaves no callback
// registered with the Meter.
func FuzzRV15bRefusedUnregisterModel(f *testing.F) {
	f.Add([]byte{0, 0, 1, 2, 7, 10, 7, 3, 5, 7, 4, 7})
	f.Add([]byte{0, 8, 0, 18, 7, 26, 7, 3, 7, 6, 7})
	f.Add([]byte{0, 0, 0, 2, 10, 18, 7, 4, 4, 7, 0, 7})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 200 {
			script = script[:200]
		}
		r, p, opt := newStepProvider(t)
		names := [2]string{"a", "b"}
		var (
			sems  [2][]modelReg
			ended []metric.Registration
			next  int64 = 1
		)
		for step, b := range script {
			op, arg := b%8, int(b>>3)
			switch op {
			case 0, 1:
				s := arg % 2
				reg, err := ctxsyncotel.ObserveSemaphore(names[s], ctxsync.NewSemaphore(int(next)), opt)
				if err != nil {
					t.Fatal(err)
				}
				sems[s] = append(sems[s], modelReg{reg, next})
				next++
			case 2, 3:
				// Unregister, the Meter refusing its first (op 3:
				// second) unregister if arg says so.
				s := arg % 2
				if len(sems[s]) == 0 {
					continue
				}
				i := (arg / 4) % len(sems[s])
				refuse := arg/2%2 == 1
				if refuse {
					p.unregister = []string{"refuse"}
					if op == 3 {
						p.unregister = []string{"", "refuse"}
					}
				}
				err := sems[s][i].reg.Unregister()
				p.unregister = nil
				if err != nil && !errors.Is(err, errUnregisterRefused) {
					t.Fatalf("step %d: Unregister = %v", step, err)
				}
				ended = append(ended, sems[s][i].reg)
				sems[s] = append(sems[s][:i], sems[s][i+1:]...)
			case 4, 5:
				if len(ended) > 0 {
					if err := ended[arg%len(ended)].Unregister(); err != nil {
						t.Fatalf("step %d: a later Unregister: %v", step, err)
					}
				}
			default:
				c := collect(t, r)
				for s := range 2 {
					set := attribute.NewSet(ctxsyncotel.SemaphoreNameKey.String(names[s]))
					got, ok := exactPoint(c, "ctxsync.semaphore.available", set)
					if len(sems[s]) == 0 {
						if ok {
							t.Fatalf("step %d: series %s reported (%d) with no registration in force", step, names[s], got)
						}
						continue
					}
					if want := sems[s][len(sems[s])-1].value; !ok || got != want {
						t.Fatalf("step %d: series %s: %d (reported %v), want %d, the newest registration's", step, names[s], got, ok, want)
					}
				}
			}
		}
		for s := range 2 {
			for _, m := range sems[s] {
				ended = append(ended, m.reg)
				if err := m.reg.Unregister(); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, reg := range ended {
			if err := reg.Unregister(); err != nil {
				t.Fatalf("a last Unregister: %v", err)
			}
		}
		if n := p.callbacks(); n != 0 {
			t.Errorf("%d callbacks left registered with the Meter after every Unregister", n)
		}
		if n := collect(t, r).points("ctxsync.semaphore.available"); n != 0 {
			t.Errorf("%d points after every Unregister, want none", n)
		}
	})
}

// gaugeFailingProvider gives Meters whose Int64ObservableGauge refuses,
// panics or calls runtime.Goexit, as how says, once.
type gaugeFailingProvider struct {
	metric.MeterProvider
	how string
}

func (p *gaugeFailingProvider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return &gaugeFailingMeter{Meter: p.MeterProvider.Meter(name, opts...), p: p}
}

type gaugeFailingMeter struct {
	metric.Meter
	p *gaugeFailingProvider
}

func (m *gaugeFailingMeter) Int64ObservableGauge(name string, opts ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	how := m.p.how
	m.p.how = ""
	switch how {
	case "refuse":
		return nil, errChaos
	case "panic":
		panic(meterPanic)
	case "goexit":
		runtime.Goexit()
	}
	return m.Meter.Int64ObservableGauge(name, opts...)
}

// TestRV15bObserveLockHeldInstrumentFails: ObserveLock makes
// ctxsync.lock.held for a source with no Locked method too (an RWLock); a
// Meter that refuses it, panics or calls runtime.Goexit there fails the
// Observe, whether or not another registration is in force under the name,
// and leaves the series as it was: the one in force reports, once.
func TestRV15bObserveLockHeldInstrumentFails(t *testing.T) {
	for _, how := range []string{"refuse", "panic", "goexit"} {
		for _, alone := range []bool{true, false} {
			r := sdkmetric.NewManualReader()
			sdk := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
			p := &gaugeFailingProvider{MeterProvider: sdk}
			opt := ctxsyncotel.WithMeterProvider(p)
			l := ctxsync.NewLock()
			var older metric.Registration
			if !alone {
				var err error
				if older, err = ctxsyncotel.ObserveLock("l", l, opt); err != nil {
					t.Fatal(err)
				}
			}
			p.how = how
			v, exited := inGoroutine(func() {
				if _, err := ctxsyncotel.ObserveLock("l", ctxsync.NewRWLock(), opt); !errors.Is(err, errChaos) {
					t.Errorf("%s: ObserveLock = %v, want the Meter's error", how, err)
				}
			})
			if how == "panic" && v != meterPanic || how == "goexit" && !exited {
				t.Errorf("%s: ObserveLock ended with %v (Goexit %v)", how, v, exited)
			}
			if err := l.Lock(context.Background()); err != nil {
				t.Fatal(err)
			}
			c := collect(t, r)
			if alone {
				if n := c.points("ctxsync.lock.waiting"); n != 0 {
					t.Errorf("%s/alone: %d points of ctxsync.lock.waiting, want none", how, n)
				}
			} else if got := c.point(t, "ctxsync.lock.held", attrString("ctxsync.lock.name", "l")); got != 1 {
				t.Errorf("%s: ctxsync.lock.held = %d, want 1, the Lock in force", how, got)
			}
			l.Unlock()
			if older != nil {
				if err := older.Unregister(); err != nil {
					t.Fatal(err)
				}
			}
			reg, err := ctxsyncotel.ObserveLock("l", ctxsync.NewRWLock(), opt)
			if err != nil {
				t.Fatal(err)
			}
			if n := collect(t, r).points("ctxsync.lock.waiting"); n != 1 {
				t.Errorf("%s/%v: a later ObserveLock: %d points of ctxsync.lock.waiting, want 1", how, alone, n)
			}
			_ = reg.Unregister()
			_ = sdk.Shutdown(context.Background())
		}
	}
}

// TestRV15bTwoMeterProviders: one name observed through two providers is
// two series, one per provider, each reported by its own callback: the end
// of every registration through one leaves the other's reported, once.
func TestRV15bTwoMeterProviders(t *testing.T) {
	r1, p1, opt1 := newStepProvider(t)
	r2, p2, opt2 := newStepProvider(t)
	a1, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(3), opt1)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(5), opt2)
	if err != nil {
		t.Fatal(err)
	}
	b1, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(7), opt1)
	if err != nil {
		t.Fatal(err)
	}
	wantSemaphore(t, r1, "the first provider", 7)
	wantSemaphore(t, r2, "the second provider", 5)
	for _, reg := range []metric.Registration{a1, b1} {
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
	}
	wantSemaphore(t, r1, "the first provider, all ended", 0)
	wantSemaphore(t, r2, "the second provider, the first's ended", 5)
	if err := a2.Unregister(); err != nil {
		t.Fatal(err)
	}
	wantSemaphore(t, r2, "the second provider, all ended", 0)
	if n := p1.callbacks() + p2.callbacks(); n != 0 {
		t.Errorf("%d callbacks left registered with the Meters", n)
	}
}
