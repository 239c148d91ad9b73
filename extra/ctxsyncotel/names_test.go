package ctxsyncotel_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

func poolNameOf(name string) attribute.KeyValue { return semconv.DBClientConnectionPoolName(name) }

func newOwnNamedPool(t *testing.T, name string, hooks pool.Hooks) *pool.Pool[int] {
	t.Helper()
	p, err := pool.New(pool.Config[int]{
		Name:    name,
		New:     func(context.Context) (int, error) { return 1, nil },
		MaxSize: 1,
		Hooks:   hooks,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// useOnce acquires a resource of p, waiting for New, releases it, and
// waits until OnCreate has been told.
func useOnce(t *testing.T, p *pool.Pool[int]) {
	t.Helper()
	r, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	synctest.Wait()
}

// TestPoolMetricsNamedOnce: NewPoolMetrics("") once failed on the empty
// name, and the name was written twice; now the hooks and Observe read the
// pool's own Config.Name, and every instrument carries it.
func TestPoolMetricsNamedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		m, err := ctxsyncotel.NewPoolMetrics("", mp)
		if err != nil {
			t.Fatal(err)
		}
		p := newOwnNamedPool(t, "db", m.Hooks(pool.Hooks{}))
		reg, err := m.Observe(p)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = reg.Unregister() }()
		useOnce(t, p)
		c := collect(t, r)
		if h := c.hist(t, "db.client.connection.wait_time", poolNameOf("db")); h.Count != 1 {
			t.Errorf("wait_time{db} count = %d, want 1", h.Count)
		}
		if h := c.hist(t, "db.client.connection.create_time", poolNameOf("db")); h.Count != 1 {
			t.Errorf("create_time{db} count = %d, want 1", h.Count)
		}
		if got := c.point(t, "ctxsync.pool.acquires", poolNameOf("db")); got != 1 {
			t.Errorf("acquires{db} = %d, want 1", got)
		}
		if n := c.points("db.client.connection.wait_time"); n != 1 {
			t.Errorf("wait_time has %d data points, want 1 (no unnamed one)", n)
		}
	})
}

// TestPoolMetricsNameGivenWins: a name given to NewPoolMetrics wins over
// the pool's own, in the hooks and in Observe.
func TestPoolMetricsNameGivenWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		m, err := ctxsyncotel.NewPoolMetrics("primary", mp)
		if err != nil {
			t.Fatal(err)
		}
		p := newOwnNamedPool(t, "db", m.Hooks(pool.Hooks{}))
		reg, err := m.Observe(p)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = reg.Unregister() }()
		useOnce(t, p)
		c := collect(t, r)
		if h := c.hist(t, "db.client.connection.wait_time", poolNameOf("primary")); h.Count != 1 {
			t.Errorf("wait_time{primary} count = %d, want 1", h.Count)
		}
		if got := c.point(t, "ctxsync.pool.acquires", poolNameOf("primary")); got != 1 {
			t.Errorf("acquires{primary} = %d, want 1", got)
		}
		if n := c.points("ctxsync.pool.acquires"); n != 1 {
			t.Errorf("acquires has %d data points, want 1", n)
		}
	})
}

// TestPoolMetricsSharedByPools: hooks made with no name, shared by two
// pools, measure each under its own name; Observe of a third pool reports
// under the third's name.
func TestPoolMetricsSharedByPools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		m, err := ctxsyncotel.NewPoolMetrics("", mp)
		if err != nil {
			t.Fatal(err)
		}
		hooks := m.Hooks(pool.Hooks{})
		a, b := newOwnNamedPool(t, "a", hooks), newOwnNamedPool(t, "b", hooks)
		useOnce(t, a)
		useOnce(t, b)
		useOnce(t, b)
		reg, err := m.Observe(newOwnNamedPool(t, "c", pool.Hooks{}))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = reg.Unregister() }()
		c := collect(t, r)
		for name, want := range map[string]uint64{"a": 1, "b": 1} { // b's second Acquire took the idle one
			if h := c.hist(t, "db.client.connection.create_time", poolNameOf(name)); h.Count != want {
				t.Errorf("create_time{%s} count = %d, want %d", name, h.Count, want)
			}
		}
		if got := c.point(t, "db.client.connection.max", poolNameOf("c")); got != 1 {
			t.Errorf("max{c} = %d, want 1", got)
		}
	})
}

// TestPoolMetricsOfAPoolWithNoName: Observe fails, and the hooks panic
// naming the package, for metrics with no name of a pool with none; they
// go on working for a named pool after.
func TestPoolMetricsOfAPoolWithNoName(t *testing.T) {
	r, mp := newProvider(t)
	m, err := ctxsyncotel.NewPoolMetrics("", mp)
	if err != nil {
		t.Fatal(err)
	}
	p := newOwnNamedPool(t, "", pool.Hooks{})
	if _, err := m.Observe(p); err == nil || !strings.HasPrefix(err.Error(), "ctxsyncotel: ") || !strings.Contains(err.Error(), "Config.Name") {
		t.Errorf("Observe of a pool with no name = %v, want an error naming Config.Name", err)
	}
	hooks := m.Hooks(pool.Hooks{})
	for _, f := range []func(){
		func() { hooks.OnAcquire(pool.AcquireEvent{}) },
		func() { hooks.OnCreate(pool.CreateEvent{}) },
	} {
		func() {
			defer func() {
				if msg := fmt.Sprint(recover()); !strings.HasPrefix(msg, "ctxsyncotel: ") || !strings.Contains(msg, "Config.Name") {
					t.Errorf("panic %q, want one naming the package and Config.Name", msg)
				}
			}()
			f()
		}()
	}
	hooks.OnAcquire(pool.AcquireEvent{Name: "db", Waited: true, Wait: time.Millisecond})
	if h := collect(t, r).hist(t, "db.client.connection.wait_time", poolNameOf("db")); h.Count != 1 {
		t.Errorf("wait_time{db} count = %d, want 1", h.Count)
	}
	// Observe is free again: the failed one registered nothing.
	reg, err := m.Observe(newOwnNamedPool(t, "db", pool.Hooks{}))
	if err != nil {
		t.Fatal(err)
	}
	_ = reg.Unregister()
}

// TestBreakerMetricsNamedOnce: NewBreakerMetrics("") reads the breaker's
// Settings.Name in OnCall's events and in Observe; OnStateChange, whose
// changes carry no name, counts under the name learned first, the changes
// told before it was learned included.
func TestBreakerMetricsNamedOnce(t *testing.T) {
	r, mp := newProvider(t)
	m, err := ctxsyncotel.NewBreakerMetrics("", mp)
	if err != nil {
		t.Fatal(err)
	}
	b := breaker.New(breaker.Settings{
		Name: "payments", FailureThreshold: 1, OpenTimeout: time.Hour,
		OnCall: m.OnCall(nil), OnStateChange: m.OnStateChange(nil),
	})
	// The first failure opens it: the change is told before the call, so
	// before the metrics know any name.
	if err := b.Execute(context.Background(), func(context.Context) error { return errors.New("down") }); err == nil {
		t.Fatal("Execute = nil, want the error")
	}
	if err := b.Execute(context.Background(), func(context.Context) error { return nil }); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("Execute = %v, want ErrOpen", err)
	}
	reg, err := m.Observe(b)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Unregister() }()
	b.Reset() // a change told with the name known
	c := collect(t, r)
	if h := c.hist(t, "ctxsync.breaker.call.duration", breakerNameOf("payments"), outcome(breaker.Failure.String())); h.Count != 1 {
		t.Errorf("call.duration{payments,failure} count = %d, want 1", h.Count)
	}
	if got := c.point(t, "ctxsync.breaker.state_changes", breakerNameOf("payments"), state(breaker.Open.String())); got != 1 {
		t.Errorf("state_changes{payments,open} = %d, want 1", got)
	}
	if got := c.point(t, "ctxsync.breaker.state_changes", breakerNameOf("payments"), state(breaker.Closed.String())); got != 1 {
		t.Errorf("state_changes{payments,closed} = %d, want 1", got)
	}
	if got := c.point(t, "ctxsync.breaker.calls", breakerNameOf("payments"), outcome(breaker.Rejected.String())); got != 0 {
		t.Errorf("calls{payments,rejected} = %d after Reset, want 0", got)
	}
	if n := c.points("ctxsync.breaker.state_changes"); n != 2 {
		t.Errorf("state_changes has %d data points, want 2", n)
	}
}

// TestBreakerMetricsChangesHeldUntilObserve: a change of state told before
// any name (ForceOpen, no call yet) is counted once Observe learns it.
func TestBreakerMetricsChangesHeldUntilObserve(t *testing.T) {
	r, mp := newProvider(t)
	m, err := ctxsyncotel.NewBreakerMetrics("", mp)
	if err != nil {
		t.Fatal(err)
	}
	b := breaker.New(breaker.Settings{Name: "api", OnStateChange: m.OnStateChange(nil)})
	b.ForceOpen()
	if n := collect(t, r).points("ctxsync.breaker.state_changes"); n != 0 {
		t.Errorf("state_changes has %d data points before a name is known, want 0", n)
	}
	reg, err := m.Observe(b)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Unregister() }()
	if got := collect(t, r).point(t, "ctxsync.breaker.state_changes", breakerNameOf("api"), state(breaker.Open.String())); got != 1 {
		t.Errorf("state_changes{api,open} = %d, want 1", got)
	}
}

// TestBreakerMetricsOfTransportHosts: an OnCall made with no name, given to
// a breaker.Transport, measures the calls of each host's breaker under that
// breaker's name.
func TestBreakerMetricsOfTransportHosts(t *testing.T) {
	r, mp := newProvider(t)
	m, err := ctxsyncotel.NewBreakerMetrics("", mp)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &breaker.Transport{Base: okTransport{}, Settings: breaker.Settings{Name: "api", OnCall: m.OnCall(nil)}}}
	for _, url := range []string{"http://a.test/", "http://b.test/", "http://b.test/"} {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	c := collect(t, r)
	for name, want := range map[string]uint64{"api a.test": 1, "api b.test": 2} {
		if h := c.hist(t, "ctxsync.breaker.call.duration", breakerNameOf(name), outcome(breaker.Success.String())); h.Count != want {
			t.Errorf("call.duration{%s} count = %d, want %d", name, h.Count, want)
		}
	}
}

// TestBreakerMetricsNameGivenWins and of a breaker with no name.
func TestBreakerMetricsNameGivenWins(t *testing.T) {
	r, mp := newProvider(t)
	m, err := ctxsyncotel.NewBreakerMetrics("stock", mp)
	if err != nil {
		t.Fatal(err)
	}
	b := breaker.New(breaker.Settings{Name: "inventory", OnCall: m.OnCall(nil)})
	if err := b.Execute(context.Background(), func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if h := collect(t, r).hist(t, "ctxsync.breaker.call.duration", breakerNameOf("stock"), outcome(breaker.Success.String())); h.Count != 1 {
		t.Errorf("call.duration{stock} count = %d, want 1", h.Count)
	}

	own, err := ctxsyncotel.NewBreakerMetrics("", mp)
	if err != nil {
		t.Fatal(err)
	}
	unnamed := breaker.New(breaker.Settings{OnCall: own.OnCall(nil)})
	if _, err := own.Observe(unnamed); err == nil || !strings.Contains(err.Error(), "Settings.Name") {
		t.Errorf("Observe of a breaker with no name = %v, want an error naming Settings.Name", err)
	}
	func() {
		defer func() {
			if msg := fmt.Sprint(recover()); !strings.HasPrefix(msg, "ctxsyncotel: ") || !strings.Contains(msg, "Settings.Name") {
				t.Errorf("panic %q, want one naming the package and Settings.Name", msg)
			}
		}()
		_ = unnamed.Execute(context.Background(), func(context.Context) error { return nil })
	}()
	if got := unnamed.Metrics().Total.Successes; got != 1 {
		t.Errorf("the breaker counted %d successes, want 1: OnCall panics once the call is counted", got)
	}
}

// TestOwnNameMetricsConcurrent: metrics made with no name, told at once by
// many goroutines of events of many names, measure each under its own
// name, none lost; state changes told before any name are all counted once
// one is learned. Run with -race: each name's options are read without a
// lock.
func TestOwnNameMetricsConcurrent(t *testing.T) {
	r, mp := newProvider(t)
	pm, err := ctxsyncotel.NewPoolMetrics("", mp)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := ctxsyncotel.NewBreakerMetrics("", mp)
	if err != nil {
		t.Fatal(err)
	}
	hooks, onCall, onChange := pm.Hooks(pool.Hooks{}), bm.OnCall(nil), bm.OnStateChange(nil)
	const goroutines, rounds, names = 8, 200, 5
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(g), 2))
			for range rounds {
				name := fmt.Sprint("n", rnd.IntN(names))
				onChange(breaker.Closed, breaker.Open, breaker.Counts{})
				hooks.OnAcquire(pool.AcquireEvent{Name: name, Waited: true, Wait: time.Millisecond})
				onCall(breaker.CallEvent{Name: name, Outcome: breaker.Success, Duration: time.Millisecond})
			}
		})
	}
	wg.Wait()
	c := collect(t, r)
	var waits, calls uint64
	for i := range names {
		name := fmt.Sprint("n", i)
		waits += c.hist(t, "db.client.connection.wait_time", poolNameOf(name)).Count
		calls += c.hist(t, "ctxsync.breaker.call.duration", breakerNameOf(name), outcome(breaker.Success.String())).Count
	}
	if waits != goroutines*rounds || calls != goroutines*rounds {
		t.Errorf("measured %d waits and %d calls, want %d of each", waits, calls, goroutines*rounds)
	}
	if got := c.point(t, "ctxsync.breaker.state_changes", state(breaker.Open.String())); got != goroutines*rounds {
		t.Errorf("state_changes = %d, want %d, under one name", got, goroutines*rounds)
	}
}

// TestPoolWaitPairCountsTheSameAcquires pins the metric pair of the pool's
// waits: after n Acquires that queued (the first for New, the others for a
// release), ctxsync.pool.waits reads n and ctxsync.pool.wait_duration
// their waits in all, above 0, so that duration ÷ count is the mean wait.
func TestPoolWaitPairCountsTheSameAcquires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		m, err := ctxsyncotel.NewPoolMetrics("", mp)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pool.New(pool.Config[int]{
			Name: "db",
			New: func(context.Context) (int, error) {
				time.Sleep(time.Millisecond)
				return 1, nil
			},
			MaxSize: 1,
			Hooks:   m.Hooks(pool.Hooks{}),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
		reg, err := m.Observe(p)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = reg.Unregister() }()
		const n = 4
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				r, err := p.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(10 * time.Millisecond) // held
				r.Release()
			})
			synctest.Wait() // queued in this order, at the same instant
		}
		wg.Wait()
		c := collect(t, r)
		count := c.point(t, "ctxsync.pool.waits", poolNameOf("db"))
		sum := c.fpoint(t, "ctxsync.pool.wait_duration", poolNameOf("db"))
		h := c.hist(t, "db.client.connection.wait_time", poolNameOf("db"))
		// The first waits 1ms for New; the k-th 1ms and k holds of 10ms.
		want := (n*1 + 10*n*(n-1)/2) * time.Millisecond
		if count != n || h.Count != n {
			t.Errorf("ctxsync.pool.waits = %d, wait_time count = %d, want %d", count, h.Count, n)
		}
		if !(sum > 0) || sum != want.Seconds() || math.Abs(h.Sum-sum) > 1e-12 {
			t.Errorf("ctxsync.pool.wait_duration = %v, wait_time sum = %v, want %v", sum, h.Sum, want.Seconds())
		}
		if mean := sum / float64(count); mean != (want / n).Seconds() {
			t.Errorf("mean wait = %v, want %v", mean, (want / n).Seconds())
		}
	})
}

// TestOwnNameMetricsAcrossBubbles: metrics made with no name outside a
// bubble learn a name from an event in one, and go on serving it, and
// learn others, after the bubble has ended.
func TestOwnNameMetricsAcrossBubbles(t *testing.T) {
	r, mp := newProvider(t)
	m, err := ctxsyncotel.NewPoolMetrics("", mp)
	if err != nil {
		t.Fatal(err)
	}
	hooks := m.Hooks(pool.Hooks{})
	synctest.Test(t, func(t *testing.T) {
		useOnce(t, newOwnNamedPool(t, "db", hooks))
	})
	hooks.OnAcquire(pool.AcquireEvent{Name: "db", Waited: true})
	hooks.OnAcquire(pool.AcquireEvent{Name: "cache", Waited: true})
	c := collect(t, r)
	for name, want := range map[string]uint64{"db": 2, "cache": 1} {
		if h := c.hist(t, "db.client.connection.wait_time", poolNameOf(name)); h.Count != want {
			t.Errorf("wait_time{%s} count = %d, want %d", name, h.Count, want)
		}
	}
}
