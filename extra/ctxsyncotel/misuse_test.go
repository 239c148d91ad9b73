package ctxsyncotel_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// wantErr checks that err is not nil and says what went wrong, naming the
// package.
func wantErr(t *testing.T, what string, err error, says string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s = nil error, want one", what)
		return
	}
	if !strings.HasPrefix(err.Error(), "ctxsyncotel: ") || !strings.Contains(err.Error(), says) {
		t.Errorf("%s = %q, want an error starting with %q that says %q", what, err, "ctxsyncotel: ", says)
	}
}

func wantPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		v := recover()
		s, _ := v.(string)
		if !strings.HasPrefix(s, "ctxsyncotel: ") {
			t.Errorf("%s panicked with %v, want a message starting with %q", what, v, "ctxsyncotel: ")
		}
	}()
	f()
}

func TestBadNamesAndOptions(t *testing.T) {
	_, mp := newProvider(t)
	sem := ctxsync.NewSemaphore(1)
	constructors := map[string]func(name string, opts ...ctxsyncotel.Option) error{
		"NewPoolMetrics": func(n string, o ...ctxsyncotel.Option) error {
			_, err := ctxsyncotel.NewPoolMetrics(n, o...)
			return err
		},
		"NewBreakerMetrics": func(n string, o ...ctxsyncotel.Option) error {
			_, err := ctxsyncotel.NewBreakerMetrics(n, o...)
			return err
		},
		"NewLimiterMetrics": func(n string, o ...ctxsyncotel.Option) error {
			_, err := ctxsyncotel.NewLimiterMetrics(n, o...)
			return err
		},
		"ObserveSemaphore": func(n string, o ...ctxsyncotel.Option) error {
			_, err := ctxsyncotel.ObserveSemaphore(n, sem, o...)
			return err
		},
		"ObserveWeighted": func(n string, o ...ctxsyncotel.Option) error {
			_, err := ctxsyncotel.ObserveWeighted(n, ctxsync.NewWeighted(1), o...)
			return err
		},
		"ObserveQueue": func(n string, o ...ctxsyncotel.Option) error {
			_, err := ctxsyncotel.ObserveQueue(n, ctxsync.NewQueue[int](0), o...)
			return err
		},
		"ObserveLock": func(n string, o ...ctxsyncotel.Option) error {
			_, err := ctxsyncotel.ObserveLock(n, ctxsync.NewLock(), o...)
			return err
		},
	}
	for fn, f := range constructors {
		t.Run(fn, func(t *testing.T) {
			if fn == "NewPoolMetrics" || fn == "NewBreakerMetrics" {
				// "" means the pool's or breaker's own name.
				if err := f("", mp); err != nil {
					t.Errorf(`%s("") = %v, want nil`, fn, err)
				}
			} else {
				wantErr(t, fn+`("")`, f("", mp), "empty")
			}
			wantErr(t, fn+"(WithMeterProvider(nil))", f("x", ctxsyncotel.WithMeterProvider(nil)), "WithMeterProvider(nil)")
			var typedNil *noop.MeterProvider
			wantErr(t, fn+"(WithMeterProvider(typed nil))", f("x", ctxsyncotel.WithMeterProvider(typedNil)), "WithMeterProvider(nil)")
			wantErr(t, fn+"(nil Option)", f("x", mp, nil), "nil Option")
			for _, b := range [][]float64{
				{math.NaN()}, {math.Inf(1)}, {0, math.Inf(-1)}, {1, 1}, {2, 1},
			} {
				wantErr(t, fn+"(WithDurationBuckets(...))", f("x", mp, ctxsyncotel.WithDurationBuckets(b...)), "WithDurationBuckets")
			}
			if err := f("x", mp, ctxsyncotel.WithDurationBuckets()); err != nil {
				t.Errorf("%s(WithDurationBuckets()) = %v, want nil (the SDK's buckets)", fn, err)
			}
			if err := f("x", mp, ctxsyncotel.WithDurationBuckets(-1, 0, 1e300)); err != nil {
				t.Errorf("%s(WithDurationBuckets(-1, 0, 1e300)) = %v, want nil", fn, err)
			}
			if err := f("x"); err != nil { // the global provider: a no-op one here
				t.Errorf("%s with the global provider = %v", fn, err)
			}
		})
	}
}

func TestObserveNil(t *testing.T) {
	_, mp := newProvider(t)
	pm, _ := ctxsyncotel.NewPoolMetrics("db", mp)
	bm, _ := ctxsyncotel.NewBreakerMetrics("b", mp)
	lm, _ := ctxsyncotel.NewLimiterMetrics("l", mp)
	for what, f := range map[string]func() error{
		"PoolMetrics.Observe(nil)":       func() error { _, err := pm.Observe(nil); return err },
		"PoolMetrics.Observe(nil *Pool)": func() error { _, err := pm.Observe((*pool.Pool[int])(nil)); return err },
		"BreakerMetrics.Observe(nil)":    func() error { _, err := bm.Observe(nil); return err },
		"BreakerMetrics.Observe(nil *B)": func() error { _, err := bm.Observe((*breaker.Breaker)(nil)); return err },
		"LimiterMetrics.Observe(nil)":    func() error { _, err := lm.Observe(nil); return err },
		"LimiterMetrics.Observe(nil *T)": func() error { _, err := lm.Observe((*ratelimit.Tally)(nil)); return err },
		"ObserveSemaphore(nil)":          func() error { _, err := ctxsyncotel.ObserveSemaphore("s", nil, mp); return err },
		"ObserveSemaphore(nil *Bounded)": func() error {
			_, err := ctxsyncotel.ObserveSemaphore("s", (*ctxsync.BoundedSemaphore)(nil), mp)
			return err
		},
		"ObserveWeighted(nil *Weighted)": func() error { _, err := ctxsyncotel.ObserveWeighted("w", (*ctxsync.Weighted)(nil), mp); return err },
		"ObserveQueue(nil *Queue)":       func() error { _, err := ctxsyncotel.ObserveQueue("q", (*ctxsync.Queue[int])(nil), mp); return err },
		"ObserveLock(nil)":               func() error { _, err := ctxsyncotel.ObserveLock("l", nil, mp); return err },
		"ObserveLock(nil *Lock)":         func() error { _, err := ctxsyncotel.ObserveLock("l", (*ctxsync.Lock)(nil), mp); return err },
		"ObserveLock(nil *RWLock)":       func() error { _, err := ctxsyncotel.ObserveLock("l", (*ctxsync.RWLock)(nil), mp); return err },
		"ObserveQueue(nil *PriorityQueue)": func() error {
			_, err := ctxsyncotel.ObserveQueue("q", (*ctxsync.PriorityQueue[int])(nil), mp)
			return err
		},
	} {
		wantErr(t, what, f(), "nil")
	}
	// The failed Observes left the metrics free to observe.
	p, err := pool.New(pool.Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	reg, err := pm.Observe(p)
	if err != nil {
		t.Fatalf("Observe after failed ones = %v", err)
	}
	reg.Unregister()
}

// TestObserveTwice: a metrics value observes one source at a time; an
// Unregister frees it, and a second Unregister of the same registration
// does not free it from a later one.
func TestObserveTwice(t *testing.T) {
	r, mp := newProvider(t)
	m, err := ctxsyncotel.NewLimiterMetrics("l", mp)
	if err != nil {
		t.Fatal(err)
	}
	var t1, t2 ratelimit.Tally
	reg1, err := m.Observe(&t1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Observe(&t2)
	wantErr(t, "second Observe", err, "observed already")
	if err := reg1.Unregister(); err != nil {
		t.Fatal(err)
	}
	reg2, err := m.Observe(&t2)
	if err != nil {
		t.Fatalf("Observe after Unregister = %v", err)
	}
	_ = reg1.Unregister()
	_, err = m.Observe(&t1)
	wantErr(t, "Observe after a repeated Unregister of an old registration", err, "observed already")
	t2.Wrap(ratelimit.NewTokenBucket(1, 1)).AllowN(1)
	c := collect(t, r)
	if got := c.point(t, "ctxsync.ratelimit.decisions", decision("allowed")); got != 1 {
		t.Errorf("decisions{allowed} = %d, want 1 (t2's)", got)
	}
	reg2.Unregister()

	bm, _ := ctxsyncotel.NewBreakerMetrics("b", mp)
	b := breaker.New(breaker.Settings{})
	breg, err := bm.Observe(b)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bm.Observe(b)
	wantErr(t, "second BreakerMetrics.Observe", err, "observed already")
	breg.Unregister()

	pm, _ := ctxsyncotel.NewPoolMetrics("db", mp)
	p, err := pool.New(pool.Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	preg, err := pm.Observe(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pm.Observe(p)
	wantErr(t, "second PoolMetrics.Observe", err, "observed already")
	preg.Unregister()
}

func TestZeroMetricsPanic(t *testing.T) {
	var nilPool *ctxsyncotel.PoolMetrics
	var nilBreaker *ctxsyncotel.BreakerMetrics
	var nilLimiter *ctxsyncotel.LimiterMetrics
	for what, f := range map[string]func(){
		"nil PoolMetrics.Hooks":       func() { nilPool.Hooks(pool.Hooks{}) },
		"zero PoolMetrics.Hooks":      func() { new(ctxsyncotel.PoolMetrics).Hooks(pool.Hooks{}) },
		"zero PoolMetrics.Observe":    func() { new(ctxsyncotel.PoolMetrics).Observe(nil) },
		"nil BreakerMetrics.OnCall":   func() { nilBreaker.OnCall(nil) },
		"zero BreakerMetrics.Observe": func() { new(ctxsyncotel.BreakerMetrics).Observe(nil) },
		"nil LimiterMetrics.OnWait":   func() { nilLimiter.OnWait(nil) },
		"zero LimiterMetrics.Observe": func() { new(ctxsyncotel.LimiterMetrics).Observe(nil) },
	} {
		wantPanic(t, what, f)
	}
}

// TestNameWins: an attribute of WithAttributes with the key of the name
// attribute does not replace the name.
func TestNameWins(t *testing.T) {
	r, mp := newProvider(t)
	_, err := ctxsyncotel.ObserveSemaphore("mine", ctxsync.NewSemaphore(1), mp,
		ctxsyncotel.WithAttributes(attribute.String("ctxsync.semaphore.name", "theirs"), attribute.Int("shard", 3)))
	if err != nil {
		t.Fatal(err)
	}
	c := collect(t, r)
	if got := c.point(t, "ctxsync.semaphore.available", attribute.String("ctxsync.semaphore.name", "mine"), attribute.Int("shard", 3)); got != 1 {
		t.Errorf("available = %d, want 1", got)
	}
}

// failingProvider makes meters that refuse every callback, and every
// instrument too if instruments is set.
type failingProvider struct {
	noop.MeterProvider
	instruments bool
}

func (p failingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return failingMeter{instruments: p.instruments}
}

type failingMeter struct {
	noop.Meter
	instruments bool
}

var errRefused = errors.New("refused by the meter")

func (m failingMeter) fail() error {
	if m.instruments {
		return errRefused
	}
	return nil
}

func (m failingMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return noop.Int64Counter{}, m.fail()
}

func (m failingMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return noop.Float64Histogram{}, m.fail()
}

func (m failingMeter) Int64ObservableCounter(string, ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	return noop.Int64ObservableCounter{}, m.fail()
}

func (m failingMeter) Int64ObservableUpDownCounter(string, ...metric.Int64ObservableUpDownCounterOption) (metric.Int64ObservableUpDownCounter, error) {
	return noop.Int64ObservableUpDownCounter{}, m.fail()
}

func (m failingMeter) Int64ObservableGauge(string, ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	return noop.Int64ObservableGauge{}, m.fail()
}

func (m failingMeter) Float64ObservableCounter(string, ...metric.Float64ObservableCounterOption) (metric.Float64ObservableCounter, error) {
	return noop.Float64ObservableCounter{}, m.fail()
}

func (failingMeter) RegisterCallback(metric.Callback, ...metric.Observable) (metric.Registration, error) {
	return nil, errRefused
}

func TestMeterRefuses(t *testing.T) {
	bad := ctxsyncotel.WithMeterProvider(failingProvider{instruments: true})
	if _, err := ctxsyncotel.NewPoolMetrics("db", bad); !errors.Is(err, errRefused) {
		t.Errorf("NewPoolMetrics = %v, want %v", err, errRefused)
	}
	if _, err := ctxsyncotel.NewBreakerMetrics("b", bad); !errors.Is(err, errRefused) {
		t.Errorf("NewBreakerMetrics = %v, want %v", err, errRefused)
	}
	if _, err := ctxsyncotel.NewLimiterMetrics("l", bad); !errors.Is(err, errRefused) {
		t.Errorf("NewLimiterMetrics = %v, want %v", err, errRefused)
	}
	for what, f := range map[string]func(ctxsyncotel.Option) error{
		"ObserveSemaphore": func(o ctxsyncotel.Option) error {
			_, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(1), o)
			return err
		},
		"ObserveWeighted": func(o ctxsyncotel.Option) error {
			_, err := ctxsyncotel.ObserveWeighted("w", ctxsync.NewWeighted(1), o)
			return err
		},
		"ObserveQueue": func(o ctxsyncotel.Option) error {
			_, err := ctxsyncotel.ObserveQueue("q", ctxsync.NewQueue[int](0), o)
			return err
		},
		"ObserveLock": func(o ctxsyncotel.Option) error {
			_, err := ctxsyncotel.ObserveLock("l", ctxsync.NewLock(), o)
			return err
		},
	} {
		for _, instruments := range []bool{true, false} {
			if err := f(ctxsyncotel.WithMeterProvider(failingProvider{instruments: instruments})); !errors.Is(err, errRefused) {
				t.Errorf("%s = %v, want %v", what, err, errRefused)
			}
		}
	}

	// The instruments are made, the callback refused: each Observe fails
	// with the meter's error, not with "observed already".
	ok := ctxsyncotel.WithMeterProvider(failingProvider{})
	pm, err := ctxsyncotel.NewPoolMetrics("db", ok)
	if err != nil {
		t.Fatal(err)
	}
	bm, _ := ctxsyncotel.NewBreakerMetrics("b", ok)
	lm, _ := ctxsyncotel.NewLimiterMetrics("l", ok)
	p, err := pool.New(pool.Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	b := breaker.New(breaker.Settings{})
	for range 2 {
		if _, err := pm.Observe(p); !errors.Is(err, errRefused) {
			t.Errorf("PoolMetrics.Observe = %v, want %v", err, errRefused)
		}
		if _, err := bm.Observe(b); !errors.Is(err, errRefused) {
			t.Errorf("BreakerMetrics.Observe = %v, want %v", err, errRefused)
		}
		if _, err := lm.Observe(new(ratelimit.Tally)); !errors.Is(err, errRefused) {
			t.Errorf("LimiterMetrics.Observe = %v, want %v", err, errRefused)
		}
	}
	// And the hooks work, on the no-op instruments.
	pm.Hooks(pool.Hooks{}).OnAcquire(pool.AcquireEvent{})
	bm.OnCall(nil)(breaker.CallEvent{Outcome: breaker.Success})
	bm.OnStateChange(nil)(breaker.Closed, breaker.Open, breaker.Counts{})
	lm.OnWait(nil)(0, nil)
}

// TestUserHookPanics: a panic of the user's hook reaches the caller, after
// ours has recorded the event.
func TestUserHookPanics(t *testing.T) {
	r, mp := newProvider(t)
	m, err := ctxsyncotel.NewBreakerMetrics("payments", mp)
	if err != nil {
		t.Fatal(err)
	}
	on := m.OnCall(func(breaker.CallEvent) { panic("user's") })
	func() {
		defer func() {
			if v := recover(); v != "user's" {
				t.Errorf("OnCall panicked with %v, want the user's panic", v)
			}
		}()
		on(breaker.CallEvent{Outcome: breaker.Failure, State: breaker.Closed})
	}()
	c := collect(t, r)
	if got := c.hist(t, "ctxsync.breaker.call.duration", outcome("failure")).Count; got != 1 {
		t.Errorf("call.duration{failure} count = %d, want 1", got)
	}
}

// nilMeterProvider gives a nil Meter: a broken provider, which every
// constructor and Observe function must refuse with an error, not a nil
// dereference.
type nilMeterProvider struct{ noop.MeterProvider }

func (nilMeterProvider) Meter(string, ...metric.MeterOption) metric.Meter { return nil }

func TestNilMeterIsAnError(t *testing.T) {
	opt := ctxsyncotel.WithMeterProvider(nilMeterProvider{})
	for what, f := range map[string]func() error{
		"NewPoolMetrics":    func() error { _, err := ctxsyncotel.NewPoolMetrics("p", opt); return err },
		"NewBreakerMetrics": func() error { _, err := ctxsyncotel.NewBreakerMetrics("b", opt); return err },
		"NewLimiterMetrics": func() error { _, err := ctxsyncotel.NewLimiterMetrics("l", opt); return err },
		"ObserveSemaphore":  func() error { _, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(1), opt); return err },
		"ObserveWeighted":   func() error { _, err := ctxsyncotel.ObserveWeighted("w", ctxsync.NewWeighted(1), opt); return err },
		"ObserveQueue":      func() error { _, err := ctxsyncotel.ObserveQueue("q", ctxsync.NewQueue[int](1), opt); return err },
		"ObserveLock":       func() error { _, err := ctxsyncotel.ObserveLock("l", ctxsync.NewLock(), opt); return err },
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s panicked: %v", what, r)
				}
			}()
			wantErr(t, what, f(), "nil Meter")
		}()
	}
}

// capPanics is a queue whose Cap panics, as a source that must be made by
// its constructor does.
type capPanics struct{ *ctxsync.Queue[int] }

func (capPanics) Cap() int { panic("cap of a queue not made by its constructor") }

// TestObserveQueueReadsAllOnce: ObserveQueue reads every getter it will
// read at collections, so that one that panics does so in the caller's
// goroutine, not in the exporter's at a collection.
func TestObserveQueueReadsAllOnce(t *testing.T) {
	_, opt := newProvider(t)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "cap of a queue") {
			t.Errorf("ObserveQueue of a queue whose Cap panics: recovered %v, want Cap's panic", r)
		}
	}()
	reg, err := ctxsyncotel.ObserveQueue("q", capPanics{ctxsync.NewQueue[int](1)}, opt)
	if err == nil {
		_ = reg.Unregister()
	}
}

// nilInstrumentsProvider makes meters whose synchronous instruments are nil,
// with no error: a broken Meter, which the constructors must refuse rather
// than leave hooks that dereference nil in the pool's or the caller's
// goroutine.
type nilInstrumentsProvider struct{ noop.MeterProvider }

func (nilInstrumentsProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return nilInstrumentsMeter{}
}

type nilInstrumentsMeter struct{ noop.Meter }

func (nilInstrumentsMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return nil, nil
}

func (nilInstrumentsMeter) Float64Histogram(string, ...metric.Float64HistogramOption) (metric.Float64Histogram, error) {
	return nil, nil
}

func TestNilInstrumentIsAnError(t *testing.T) {
	opt := ctxsyncotel.WithMeterProvider(nilInstrumentsProvider{})
	_, err := ctxsyncotel.NewPoolMetrics("p", opt)
	wantErr(t, "NewPoolMetrics", err, "nil")
	_, err = ctxsyncotel.NewBreakerMetrics("b", opt)
	wantErr(t, "NewBreakerMetrics", err, "nil")
	_, err = ctxsyncotel.NewLimiterMetrics("l", opt)
	wantErr(t, "NewLimiterMetrics", err, "nil")
}

// nilRegistrationProvider makes meters whose RegisterCallback gives a nil
// Registration with no error: every Observe must refuse it rather than
// return a registration whose Unregister dereferences nil.
type nilRegistrationProvider struct{ noop.MeterProvider }

func (nilRegistrationProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return nilRegistrationMeter{}
}

type nilRegistrationMeter struct{ noop.Meter }

func (nilRegistrationMeter) RegisterCallback(metric.Callback, ...metric.Observable) (metric.Registration, error) {
	return nil, nil
}

func TestNilRegistrationIsAnError(t *testing.T) {
	opt := ctxsyncotel.WithMeterProvider(nilRegistrationProvider{})
	p, err := pool.New(pool.Config[int]{New: func(context.Context) (int, error) { return 1, nil }, MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	pm, err := ctxsyncotel.NewPoolMetrics("p", opt)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := ctxsyncotel.NewBreakerMetrics("b", opt)
	if err != nil {
		t.Fatal(err)
	}
	lm, err := ctxsyncotel.NewLimiterMetrics("l", opt)
	if err != nil {
		t.Fatal(err)
	}
	for what, f := range map[string]func() (metric.Registration, error){
		"PoolMetrics.Observe":    func() (metric.Registration, error) { return pm.Observe(p) },
		"BreakerMetrics.Observe": func() (metric.Registration, error) { return bm.Observe(breaker.New(breaker.Settings{})) },
		"LimiterMetrics.Observe": func() (metric.Registration, error) { return lm.Observe(&ratelimit.Tally{}) },
		"ObserveSemaphore": func() (metric.Registration, error) {
			return ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(1), opt)
		},
		"ObserveWeighted": func() (metric.Registration, error) {
			return ctxsyncotel.ObserveWeighted("w", ctxsync.NewWeighted(1), opt)
		},
		"ObserveQueue": func() (metric.Registration, error) {
			return ctxsyncotel.ObserveQueue("q", ctxsync.NewQueue[int](1), opt)
		},
		"ObserveLock": func() (metric.Registration, error) { return ctxsyncotel.ObserveLock("l", ctxsync.NewLock(), opt) },
	} {
		reg, err := f()
		wantErr(t, what, err, "nil Registration")
		if reg != nil {
			t.Errorf("%s gave a registration %v with its error", what, reg)
		}
	}
	// The refusal leaves the PoolMetrics free: another Observe is refused
	// for the same reason, not as observed already.
	_, err = pm.Observe(p)
	wantErr(t, "PoolMetrics.Observe again", err, "nil Registration")
}
