package ctxsyncprom_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// TestGatherMatchesRegistryOddNames: names with quotes, newlines, a NUL,
// backslashes and runes beyond ASCII, shared by sources of several kinds,
// histograms of several label values, bucket lists with a negative bound
// and +Inf, a source removed: Gather gives what a pedantic registry gives,
// in the text format and in protobuf, and merges with a registry of other
// metrics through prometheus.Gatherers.
func TestGatherMatchesRegistryOddNames(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{Namespace: "a_b", CallDurationBuckets: []float64{-1, 0, 1, math.Inf(1)}})
	names := []string{"x\",state=\"idle", "new\nline", "back\\slash", "ünï", "\x00", "Z", "a", "é", "😀", "db"}
	for i, n := range names {
		b := breaker.New(breaker.Settings{OnCall: c.BreakerOnCall(n), FailureRateThreshold: float64(10 * (i % 2))})
		for j := range i + 1 {
			_ = b.Execute(context.Background(), func(context.Context) error {
				if j%2 == 0 {
					return errors.New("x")
				}
				return nil
			})
		}
		if err := c.AddBreaker(n, b); err != nil {
			t.Fatal(err)
		}
		if err := c.AddSemaphore(n, ctxsync.NewSemaphore(i)); err != nil {
			t.Fatal(err)
		}
		if err := c.AddWaiter(n, ctxsync.NewBarrier(2, nil)); err != nil {
			t.Fatal(err)
		}
		h := c.PoolHooks(n)
		h.OnCreate(pool.CreateEvent{Duration: time.Duration(i) * time.Millisecond})
		tw := c.TallyOnWait(n)
		tw(time.Millisecond, nil)
		tw(time.Millisecond, errors.New("x"))
		tally := &ratelimit.Tally{}
		if err := c.AddTally(n, tally); err != nil {
			t.Fatal(err)
		}
	}
	c.Remove("Z")
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want := text(t, reg)
	if got := text(t, c); got != want {
		t.Errorf("Gather:\n%s\nregistry:\n%s", got, want)
	}
	if got, want := protoBytes(t, c), protoBytes(t, reg); !bytes.Equal(got, want) {
		t.Errorf("Gather's protobuf differs from the registry's")
	}
	other := prometheus.NewRegistry()
	other.MustRegister(collectors.NewGoCollector())
	g := prometheus.Gatherers{other, c}
	if _, err := g.Gather(); err != nil {
		t.Fatal(err)
	}
}

// TestWrappedRegistryConcurrentScrapes: registered through
// WrapRegistererWith, whose metrics append labels to those a sample gives
// (shared across scrapes), concurrent scrapes race on nothing.
func TestWrappedRegistryConcurrentScrapes(t *testing.T) {
	c, done := everything(t)
	defer done()
	reg := prometheus.NewRegistry()
	prometheus.WrapRegistererWith(prometheus.Labels{"instance": "a", "zone": "b"}, reg).MustRegister(c)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.Gather(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestHooksAllocateNothing: a pool's Acquire and Release with the
// Collector's hooks (joined with one of the user's) allocate nothing, nor
// do the hooks themselves when they observe.
func TestHooksAllocateNothing(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	p, err := pool.New(pool.Config[int]{
		New:     func(context.Context) (int, error) { return 1, nil },
		MaxSize: 1,
		Hooks:   ctxsyncprom.JoinPoolHooks(c.PoolHooks("db"), pool.Hooks{OnRelease: func() {}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := context.Background()
	r, _ := p.Acquire(ctx)
	r.Release()
	n := testing.AllocsPerRun(100, func() {
		r, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.Release()
	})
	if n != 0 {
		t.Errorf("allocs %v", n)
	}
	h := c.PoolHooks("db")
	n = testing.AllocsPerRun(100, func() {
		h.OnAcquire(pool.AcquireEvent{Waited: true, Wait: time.Millisecond})
		h.OnCreate(pool.CreateEvent{Duration: time.Millisecond})
	})
	if n != 0 {
		t.Errorf("hooks allocs %v", n)
	}
	oc := c.BreakerOnCall("b")
	tw := c.TallyOnWait("t")
	n = testing.AllocsPerRun(100, func() {
		oc(breaker.CallEvent{Outcome: breaker.Success, Duration: time.Millisecond})
		tw(time.Millisecond, nil)
	})
	if n != 0 {
		t.Errorf("oncall allocs %v", n)
	}
}

// TestRemoveReAddWhileScraped: sources added, removed and added again
// under the same names while a pedantic registry scrapes; what is left at
// the end is scraped once.
func TestRemoveReAddWhileScraped(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for i := range 300 {
		n := "s" + strconv.Itoa(i%3)
		_ = c.AddSemaphore(n, ctxsync.NewSemaphore(1))
		_ = c.AddQueue(n, ctxsync.NewQueue[int](1))
		c.PoolHooks(n).OnCreate(pool.CreateEvent{})
		if i%2 == 0 {
			c.Remove(n)
		}
	}
	close(stop)
	wg.Wait()
	for _, n := range []string{"s0", "s1", "s2"} {
		c.Remove(n)
		if err := c.AddSemaphore(n, ctxsync.NewSemaphore(1)); err != nil {
			t.Fatal(err)
		}
	}
	got := text(t, reg)
	if strings.Count(got, "ctxsync_semaphore_available{") != 3 {
		t.Errorf("%s", got)
	}
}

// TestUserPoolHookPanics: a hook of the user's, joined after the
// Collector's, that panics in OnAcquire leaves the pool whole, and the
// scrape tells it.
func TestUserPoolHookPanics(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	boom := true
	p, err := pool.New(pool.Config[int]{
		New:     func(context.Context) (int, error) { return 1, nil },
		MaxSize: 1,
		Hooks: ctxsyncprom.JoinPoolHooks(c.PoolHooks("db"), pool.Hooks{OnAcquire: func(pool.AcquireEvent) {
			if boom {
				panic("user hook")
			}
		}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if err := c.AddPool("db", p); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("no panic")
			}
		}()
		_, _ = p.Acquire(context.Background())
	}()
	boom = false
	st := p.Stats()
	if st.InUse != 0 {
		t.Errorf("stats after panic %+v", st)
	}
	r, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	got := text(t, c)
	if !strings.Contains(got, `ctxsync_pool_resources{name="db",state="in_use"} 0`) || !strings.Contains(got, `ctxsync_pool_acquires_total{name="db"} 2`) {
		t.Errorf("%s", got)
	}
}

// TestGatherAcrossBubbles: a Collector made outside a synctest bubble is
// fed and gathered inside one; one made inside is fed and gathered after.
func TestGatherAcrossBubbles(t *testing.T) {
	outside := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	var inside *ctxsyncprom.Collector
	var hooks pool.Hooks
	synctest.Test(t, func(t *testing.T) {
		inside = ctxsyncprom.NewCollector(ctxsyncprom.Config{})
		hooks = inside.PoolHooks("x")
		_ = outside.AddSemaphore("s", ctxsync.NewSemaphore(1))
		_ = inside.AddSemaphore("s", ctxsync.NewSemaphore(1))
		outside.PoolHooks("x").OnCreate(pool.CreateEvent{Duration: time.Second})
		if _, err := outside.Gather(); err != nil {
			t.Fatal(err)
		}
		if _, err := inside.Gather(); err != nil {
			t.Fatal(err)
		}
	})
	hooks.OnCreate(pool.CreateEvent{Duration: time.Second})
	if _, err := inside.Gather(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text(t, inside), `ctxsync_pool_create_duration_seconds_count{name="x"} 1`) {
		t.Error(text(t, inside))
	}
	inside.Remove("s")
	if _, err := outside.Gather(); err != nil {
		t.Fatal(err)
	}
}

// protoBytes renders g's families in the protobuf exposition format.
func protoBytes(t *testing.T, g prometheus.Gatherer) []byte {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}
