package ctxsyncprom_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
)

// seriesNames returns the values of the name label of the series of the
// family called family, with their counts (a histogram's sample count, or a
// counter's value), as "name=count".
func seriesNames(t *testing.T, g prometheus.Gatherer, family string) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			name, outcome := "", ""
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "name":
					name = l.GetValue()
				case "outcome":
					outcome = "/" + l.GetValue()
				}
			}
			v := m.GetCounter().GetValue()
			if h := m.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			if outcome == "" || v > 0 {
				out = append(out, fmt.Sprintf("%s%s=%v", name, outcome, v))
			}
		}
	}
	return out
}

func newNamedPool(t *testing.T, name string, hooks pool.Hooks) *pool.Pool[int] {
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

// use acquires a resource of p (waiting for New, the first time) and
// releases it, then waits until OnCreate has been told.
func use(t *testing.T, p *pool.Pool[int]) {
	t.Helper()
	r, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	for p.Stats().Constructing > 0 {
		time.Sleep(time.Millisecond) // in a bubble: virtual
	}
	synctest.Wait()
}

// TestPoolNamedOnce: a pool named in its Config is added and hooked with
// no name, and its series carry its own: the name is written once (the
// hooks were made before the pool, and took the name as an argument).
func TestPoolNamedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		p := newNamedPool(t, "db", c.PoolHooks(""))
		if err := c.AddPool("", p); err != nil {
			t.Fatal(err)
		}
		use(t, p)
		for family, want := range map[string]string{
			"ctxsync_pool_acquires_total":          "db=1",
			"ctxsync_pool_acquire_wait_seconds":    "db=1",
			"ctxsync_pool_create_duration_seconds": "db=1",
		} {
			if got := seriesNames(t, reg, family); len(got) != 1 || got[0] != want {
				t.Errorf("%s = %v, want [%s]", family, got, want)
			}
		}
		other := newNamedPool(t, "db", pool.Hooks{})
		if err := c.AddPool("", other); !errors.Is(err, ctxsyncprom.ErrDuplicateName) {
			t.Errorf("AddPool of a second pool named db = %v, want ErrDuplicateName", err)
		}
	})
}

// TestPoolNameGivenWins: a name given to AddPool or PoolHooks wins over the
// pool's own (to export a pool under the name a dashboard knows, say).
func TestPoolNameGivenWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		p := newNamedPool(t, "db", c.PoolHooks("primary"))
		if err := c.AddPool("primary", p); err != nil {
			t.Fatal(err)
		}
		use(t, p)
		for _, family := range []string{"ctxsync_pool_max_resources", "ctxsync_pool_acquire_wait_seconds", "ctxsync_pool_create_duration_seconds"} {
			if got := seriesNames(t, reg, family); len(got) != 1 || !strings.HasPrefix(got[0], "primary=") {
				t.Errorf("%s = %v, want one series, named primary", family, got)
			}
		}
	})
}

// TestPoolHooksSharedByPools: one set of PoolHooks("") serves several
// pools, each observation under the name of its own pool.
func TestPoolHooksSharedByPools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		hooks := c.PoolHooks("")
		a, b := newNamedPool(t, "a", hooks), newNamedPool(t, "b", hooks)
		use(t, a)
		use(t, b)
		got := seriesNames(t, reg, "ctxsync_pool_create_duration_seconds")
		if want := []string{"a=1", "b=1"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("create_duration_seconds = %v, want %v", got, want)
		}
	})
}

// TestBreakerNamedOnce: a breaker named in its Settings is added and
// hooked with no name; a name given wins over its own.
func TestBreakerNamedOnce(t *testing.T) {
	c, reg := newTestCollector(t)
	own := breaker.New(breaker.Settings{Name: "payments", OnCall: c.BreakerOnCall("")})
	if err := c.AddBreaker("", own); err != nil {
		t.Fatal(err)
	}
	renamed := breaker.New(breaker.Settings{Name: "inventory", OnCall: c.BreakerOnCall("stock")})
	if err := c.AddBreaker("stock", renamed); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*breaker.Breaker{own, renamed} {
		if err := b.Execute(context.Background(), func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	got := seriesNames(t, reg, "ctxsync_breaker_call_duration_seconds")
	if want := []string{"payments/success=1", "stock/success=1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("call_duration_seconds = %v, want %v", got, want)
	}
	got = seriesNames(t, reg, "ctxsync_breaker_calls_total")
	if want := []string{"payments/success=1", "stock/success=1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls_total = %v, want %v", got, want)
	}
}

// TestOwnNameHooksConcurrent: hooks made with no name, told at once by many
// goroutines of events of many names, observe each under its own name,
// none lost. Run with -race: the cache of each name's series is read
// without a lock.
func TestOwnNameHooksConcurrent(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	hooks := c.PoolHooks("")
	onCall := c.BreakerOnCall("")
	const goroutines, rounds, names = 8, 200, 5
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range rounds {
				name := fmt.Sprint("n", r.IntN(names))
				hooks.OnAcquire(pool.AcquireEvent{Name: name, Waited: true, Wait: time.Millisecond})
				onCall(breaker.CallEvent{Name: name, Outcome: breaker.Success, Duration: time.Millisecond})
			}
		})
	}
	wg.Wait()
	for _, family := range []string{"ctxsync_pool_acquire_wait_seconds", "ctxsync_breaker_call_duration_seconds"} {
		total := 0.0
		for _, series := range seriesNames(t, c, family) {
			name, count, _ := strings.Cut(series, "=")
			if !strings.HasPrefix(name, "n") {
				t.Errorf("series %q of %s: not a name told", series, family)
			}
			var n float64
			if _, err := fmt.Sscan(count, &n); err != nil {
				t.Fatal(err)
			}
			total += n
		}
		if total != goroutines*rounds {
			t.Errorf("%s observed %v events, want %d", family, total, goroutines*rounds)
		}
	}
	if n := testutil.CollectAndCount(c, "ctxsync_pool_acquire_wait_seconds"); n > names {
		t.Errorf("%d series of acquire_wait_seconds, want at most %d", n, names)
	}
}

// TestOwnNameHookPanicLeavesItWhole: the hooks of PoolHooks("") told of a
// pool with no name panic, and go on working for named ones after.
func TestOwnNameHookPanicLeavesItWhole(t *testing.T) {
	c, reg := newTestCollector(t)
	hooks := c.PoolHooks("")
	mustPanic(t, func() { hooks.OnAcquire(pool.AcquireEvent{Waited: true}) }, `PoolHooks("")`, "Config.Name")
	hooks.OnAcquire(pool.AcquireEvent{Name: "db", Waited: true, Wait: time.Millisecond})
	mustPanic(t, func() { hooks.OnAcquire(pool.AcquireEvent{Waited: true}) }, `PoolHooks("")`, "Config.Name")
	hooks.OnAcquire(pool.AcquireEvent{Name: "db", Waited: true, Wait: time.Millisecond})
	if got := seriesNames(t, reg, "ctxsync_pool_acquire_wait_seconds"); fmt.Sprint(got) != "[db=2]" {
		t.Errorf("acquire_wait_seconds = %v, want [db=2]", got)
	}
}

// TestPoolWaitPairCountsTheSameAcquires pins the metric pair of the pool's
// waits: after n Acquires that queued (the first for New, the others for a
// release), waits_total reads n and wait_duration_seconds_total their
// waits in all, above 0, so that duration ÷ count is the mean wait. They
// read 0 and 1.3e-05 side by side when waits_total counted only the
// Acquires that found the pool full.
func TestPoolWaitPairCountsTheSameAcquires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, reg := newTestCollector(t)
		p, err := pool.New(pool.Config[int]{
			Name: "db",
			New: func(context.Context) (int, error) {
				time.Sleep(time.Millisecond)
				return 1, nil
			},
			MaxSize: 1,
			Hooks:   c.PoolHooks(""),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
		if err := c.AddPool("", p); err != nil {
			t.Fatal(err)
		}
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
		count, _, _ := review2Sample(t, reg, "ctxsync_pool_waits_total", "db")
		sum, _, _ := review2Sample(t, reg, "ctxsync_pool_wait_duration_seconds_total", "db")
		_, hcount, hsum := review2Sample(t, reg, "ctxsync_pool_acquire_wait_seconds", "db")
		// The first waits 1ms for New; the k-th 1ms and k holds of 10ms.
		want := (n*1 + 10*n*(n-1)/2) * time.Millisecond
		if count != n || hcount != n {
			t.Errorf("waits_total = %v, acquire_wait_seconds count = %d, want %d", count, hcount, n)
		}
		// The histogram adds the waits as floats, one by one: near.
		if !(sum > 0) || sum != want.Seconds() || math.Abs(hsum-sum) > 1e-12 {
			t.Errorf("wait_duration_seconds_total = %v, acquire_wait_seconds sum = %v, want %v", sum, hsum, want.Seconds())
		}
		if mean := sum / count; mean != (want / n).Seconds() {
			t.Errorf("mean wait = %v, want %v", mean, (want / n).Seconds())
		}
	})
}

// FuzzOwnNames drives the hooks made with no name with events of names
// from the script (among them "", and one that is not UTF-8, which panic),
// against a model: a count per name. Every event of a good name is
// observed under it, once; a bad one panics and changes nothing.
func FuzzOwnNames(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 3, 1})
	f.Add([]byte{4, 5, 0, 0, 4})
	f.Fuzz(func(t *testing.T, script []byte) {
		names := []string{"a", "b", "", "c", "\xff", "a\x00"}
		c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
		hooks := c.PoolHooks("")
		onCall := c.BreakerOnCall("")
		model := map[string]int{}
		for _, op := range script {
			name := names[int(op)%len(names)]
			bad := name == "" || name == "\xff"
			panicked := func() (p bool) {
				defer func() { p = recover() != nil }()
				if op&0x80 == 0 {
					hooks.OnAcquire(pool.AcquireEvent{Name: name, Waited: true})
				} else {
					onCall(breaker.CallEvent{Name: name, Outcome: breaker.Success})
				}
				return false
			}()
			if panicked != bad {
				t.Fatalf("event of %q: panicked %v", name, panicked)
			}
			if !bad {
				model[fmt.Sprint(op&0x80 != 0, name)]++
			}
		}
		got := map[string]int{}
		for _, family := range []string{"ctxsync_pool_acquire_wait_seconds", "ctxsync_breaker_call_duration_seconds"} {
			for _, s := range seriesNames(t, c, family) {
				name, count, _ := strings.Cut(s, "=")
				name = strings.TrimSuffix(name, "/success")
				var n int
				if _, err := fmt.Sscan(count, &n); err != nil {
					t.Fatal(err)
				}
				if n > 0 {
					got[fmt.Sprint(family != "ctxsync_pool_acquire_wait_seconds", name)] = n
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(model) {
			t.Errorf("observed %v, want %v", got, model)
		}
	})
}
