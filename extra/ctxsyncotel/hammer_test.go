package ctxsyncotel_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// hammerRounds scales the hammer: CTXSYNC_HAMMER=10 runs ten times as many
// rounds, as in the library's own hammers.
func hammerRounds(base int) int {
	if v, err := strconv.Atoi(os.Getenv("CTXSYNC_HAMMER")); err == nil && v > 0 {
		return base * v
	}
	return base
}

var errDown = errors.New("down")

// randomCtx returns a ctx that ends at a random moment soon, or never, or
// has ended already.
func randomCtx() (context.Context, context.CancelFunc) {
	switch rand.IntN(4) {
	case 0:
		return context.WithTimeout(context.Background(), time.Duration(rand.IntN(200))*time.Microsecond)
	case 1:
		ctx, cancel := context.WithCancel(context.Background())
		if rand.IntN(2) == 0 {
			cancel()
		} else {
			time.AfterFunc(time.Duration(rand.IntN(200))*time.Microsecond, cancel)
		}
		return ctx, cancel
	}
	return context.WithCancel(context.Background())
}

// TestHammer: goroutines hammer a pool, a breaker, a limiter and a
// semaphore, with contexts that end at random, while others collect. No
// counter goes down between collections, and the gauges stay in bounds; at
// the end the histograms have counted exactly the events that the user's
// hooks, chained behind ours, counted, and the counters agree with the
// snapshots.
func TestHammer(t *testing.T) {
	rounds := hammerRounds(300)
	r, mp := newProvider(t)

	pm, err := ctxsyncotel.NewPoolMetrics("", mp) // the pool's own name, "db"
	if err != nil {
		t.Fatal(err)
	}
	var poolWaits, creates, timeouts atomic.Int64
	p, err := pool.New(pool.Config[int]{
		Name: "db",
		New: func(context.Context) (int, error) {
			if rand.IntN(10) == 0 {
				return 0, errDown
			}
			time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
			return 1, nil
		},
		MaxSize: 3,
		Hooks: pm.Hooks(pool.Hooks{
			OnAcquire: func(e pool.AcquireEvent) {
				if e.Waited {
					poolWaits.Add(1)
				}
				if errors.Is(e.Err, context.DeadlineExceeded) {
					timeouts.Add(1)
				}
			},
			OnCreate: func(e pool.CreateEvent) {
				if e.Err == nil {
					creates.Add(1)
				}
			},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	preg, err := pm.Observe(p)
	if err != nil {
		t.Fatal(err)
	}

	bm, err := ctxsyncotel.NewBreakerMetrics("", mp) // the breaker's own name, "b"
	if err != nil {
		t.Fatal(err)
	}
	var calls [breaker.Rejected + 1]atomic.Int64
	var stateChanges atomic.Int64
	b := breaker.New(breaker.Settings{
		Name:             "b",
		FailureThreshold: 3,
		OpenTimeout:      time.Millisecond,
		OnCall:           bm.OnCall(func(e breaker.CallEvent) { calls[e.Outcome].Add(1) }),
		OnStateChange:    bm.OnStateChange(func(_, _ breaker.State, _ breaker.Counts) { stateChanges.Add(1) }),
	})
	breg, err := bm.Observe(b)
	if err != nil {
		t.Fatal(err)
	}

	lm, err := ctxsyncotel.NewLimiterMetrics("l", mp)
	if err != nil {
		t.Fatal(err)
	}
	var waits atomic.Int64
	tally := &ratelimit.Tally{OnWait: lm.OnWait(func(time.Duration, error) { waits.Add(1) })}
	limiter := tally.Wrap(ratelimit.NewTokenBucket(20000, 5))
	lreg, err := lm.Observe(tally)
	if err != nil {
		t.Fatal(err)
	}

	sem := ctxsync.NewSemaphore(2)
	sreg, err := ctxsyncotel.ObserveSemaphore("s", sem, mp)
	if err != nil {
		t.Fatal(err)
	}

	var work sync.WaitGroup
	for range 8 {
		work.Go(func() {
			for range rounds {
				ctx, cancel := randomCtx()
				switch rand.IntN(4) {
				case 0:
					if res, err := p.Acquire(ctx); err == nil {
						if rand.IntN(5) == 0 {
							res.Destroy()
						} else {
							res.Release()
						}
					}
				case 1:
					_ = b.Execute(ctx, func(ctx context.Context) error {
						if rand.IntN(3) == 0 {
							return errDown
						}
						return nil
					})
				case 2:
					if rand.IntN(2) == 0 {
						limiter.AllowN(1)
					} else {
						_ = limiter.WaitN(ctx, 1)
					}
				case 3:
					if sem.Acquire(ctx) == nil {
						sem.Release()
					}
				}
				cancel()
			}
		})
	}

	// Collectors, until the work is done: counters never go down, gauges
	// stay in bounds.
	stop := make(chan struct{})
	var collectors sync.WaitGroup
	for range 2 {
		collectors.Go(func() {
			last := map[string]int64{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := collect(t, r)
				for name, m := range c {
					if s, ok := m.Data.(metricdata.Sum[int64]); ok && s.IsMonotonic {
						for _, dp := range s.DataPoints {
							key := name + "{" + dp.Attributes.Encoded(attribute.DefaultEncoder()) + "}"
							if dp.Value < last[key] {
								t.Errorf("%s went down: %d after %d", key, dp.Value, last[key])
							}
							last[key] = dp.Value
						}
					}
				}
				if _, ok := c["db.client.connection.count"]; ok {
					n := c.point(t, "db.client.connection.count", idle) + c.point(t, "db.client.connection.count", used)
					if n < 0 || n > 3 {
						t.Errorf("idle + used = %d, out of [0, 3]", n)
					}
				}
				if a := c.point(t, "ctxsync.semaphore.available"); a < 0 || a > 2 {
					t.Errorf("semaphore available = %d, out of [0, 2]", a)
				}
			}
		})
	}
	work.Wait()
	close(stop)
	collectors.Wait()

	if timeouts.Load() == 0 || calls[breaker.Rejected].Load() == 0 {
		t.Logf("the hammer made no timeout (%d) or no refusal (%d): raise CTXSYNC_HAMMER", timeouts.Load(), calls[breaker.Rejected].Load())
	}
	// A breaker left open turns half-open at the first look after its
	// OpenTimeout: were that the final collection's look, the change would be
	// counted in the middle of it, after the counter was read. Let it turn
	// now, so that the counts are at rest (without calls, it stays).
	for b.State() == breaker.Open {
		runtime.Gosched()
	}
	// A New started for an Acquire that gave up goes on in the pool's own
	// goroutine after the work: its resource counts in Stats, and its hook
	// runs, after the Acquire returned. Let it end, so that the final
	// collection reads the counts that Stats gives below.
	for deadline := time.Now().Add(time.Minute); ; runtime.Gosched() {
		if s := p.Stats(); s.Constructing == 0 && s.Created == creates.Load() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool not at rest a minute after the work: %+v, %d creations told", p.Stats(), creates.Load())
		}
	}
	c := collect(t, r)
	if got, want := c.hist(t, "db.client.connection.wait_time").Count, uint64(poolWaits.Load()); got != want {
		t.Errorf("wait_time count = %d, want %d (the Acquires that waited, as the user's hook saw)", got, want)
	}
	if got, want := c.hist(t, "db.client.connection.create_time").Count, uint64(creates.Load()); got != want {
		t.Errorf("create_time count = %d, want %d", got, want)
	}
	if n := timeouts.Load(); n > 0 {
		if got := c.point(t, "db.client.connection.timeouts"); got != n {
			t.Errorf("timeouts = %d, want %d", got, n)
		}
	}
	s := p.Stats()
	for name, want := range map[string]int64{
		"ctxsync.pool.acquires":           s.AcquireCount,
		"ctxsync.pool.connection.created": s.Created,
		"ctxsync.pool.canceled_acquires":  s.CanceledAcquires,
	} {
		if got := c.point(t, name); got != want {
			t.Errorf("%s = %d, want %d (Stats)", name, got, want)
		}
	}
	if got := c.point(t, "db.client.connection.pending_requests"); got != 0 {
		t.Errorf("pending_requests at rest = %d, want 0", got)
	}
	total := b.Metrics().Total
	for o, want := range map[breaker.Outcome]int64{
		breaker.Success: total.Successes, breaker.Failure: total.Failures,
		breaker.Ignored: total.Ignored, breaker.Rejected: total.Rejected,
	} {
		if calls[o].Load() != want {
			t.Errorf("the user's OnCall saw %d calls %s, want %d (Total)", calls[o].Load(), o, want)
		}
		if got := c.point(t, "ctxsync.breaker.calls", outcome(o.String())); got != want {
			t.Errorf("calls{%s} = %d, want %d", o, got, want)
		}
		if o == breaker.Rejected {
			continue
		}
		if got := c.hist(t, "ctxsync.breaker.call.duration", outcome(o.String())).Count; got != uint64(want) {
			t.Errorf("call.duration{%s} count = %d, want %d", o, got, want)
		}
	}
	var changed int64
	if _, ok := c["ctxsync.breaker.state_changes"]; ok {
		for _, st := range []string{"closed", "open", "half-open"} {
			if m := c["ctxsync.breaker.state_changes"]; m.Data != nil {
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					if v, _ := dp.Attributes.Value(ctxsyncotel.BreakerStateKey); v.AsString() == st {
						changed += dp.Value
					}
				}
			}
		}
	}
	if changed != stateChanges.Load() {
		t.Errorf("state_changes = %d, want %d", changed, stateChanges.Load())
	}
	counts := tally.Counts()
	if got, want := c.hist(t, "ctxsync.ratelimit.wait.duration", waitEnd("taken")).Count+
		c.hist(t, "ctxsync.ratelimit.wait.duration", waitEnd("failed")).Count, uint64(waits.Load()); got != want {
		t.Errorf("wait.duration count = %d, want %d", got, want)
	}
	if got := c.point(t, "ctxsync.ratelimit.waits", waitEnd("taken")) + c.point(t, "ctxsync.ratelimit.waits", waitEnd("failed")); got != counts.Waited+counts.WaitFailed {
		t.Errorf("waits = %d, want %d", got, counts.Waited+counts.WaitFailed)
	}
	if got := c.point(t, "ctxsync.semaphore.available"); got != 2 {
		t.Errorf("semaphore available at rest = %d, want 2", got)
	}
	for _, reg := range []interface{ Unregister() error }{preg, breg, lreg, sreg} {
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
