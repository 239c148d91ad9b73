package ctxsyncotel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// model is what the instruments must say, counted from the events that the
// user's hooks, chained behind ours, were told of.
// Atomic: the pool calls New, and so OnCreate, in a goroutine of its own.
type model struct {
	poolWaits, creates, timeouts atomic.Int64
	calls                        [breaker.Rejected + 1]atomic.Int64
	changes                      [breaker.HalfOpen + 1]atomic.Int64
	limiterWaits                 atomic.Int64
}

// FuzzMetricsModel runs a script of operations on a pool, a breaker and a
// limiter in virtual time, collecting now and then, and checks each
// collection against the model and against the sources' own snapshots.
func FuzzMetricsModel(f *testing.F) {
	f.Add([]byte{0, 0, 0, 6, 1, 0, 6, 2, 6})
	f.Add([]byte{3, 3, 3, 3, 6, 7, 3, 6, 4, 4, 5, 5, 6})
	f.Add([]byte{0, 0, 0x10, 0x20, 1, 0x30, 2, 6, 0x43, 0x83, 0xc3, 7, 0x73, 6})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 200 {
			script = script[:200]
		}
		synctest.Test(t, func(t *testing.T) { runScript(t, script) })
	})
}

func runScript(t *testing.T, script []byte) {
	r, mp := newProvider(t)
	var mo model
	var failNew atomic.Bool

	pm, err := ctxsyncotel.NewPoolMetrics("", mp) // the pool's own name, "db"
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(pool.Config[int]{
		Name: "db",
		New: func(context.Context) (int, error) {
			time.Sleep(time.Millisecond)
			if failNew.Load() {
				return 0, errDown
			}
			return 1, nil
		},
		MaxSize: 2,
		Hooks: pm.Hooks(pool.Hooks{
			OnAcquire: func(e pool.AcquireEvent) {
				if e.Waited {
					mo.poolWaits.Add(1)
				}
				if errors.Is(e.Err, context.DeadlineExceeded) {
					mo.timeouts.Add(1)
				}
			},
			OnCreate: func(e pool.CreateEvent) {
				if e.Err == nil {
					mo.creates.Add(1)
				}
			},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	preg, err := pm.Observe(p)
	if err != nil {
		t.Fatal(err)
	}
	defer preg.Unregister()

	bm, err := ctxsyncotel.NewBreakerMetrics("", mp) // the breaker's own name, "b"
	if err != nil {
		t.Fatal(err)
	}
	b := breaker.New(breaker.Settings{
		Name:             "b",
		FailureThreshold: 2,
		OpenTimeout:      5 * time.Millisecond,
		OnCall:           bm.OnCall(func(e breaker.CallEvent) { mo.calls[e.Outcome].Add(1) }),
		OnStateChange:    bm.OnStateChange(func(_, to breaker.State, _ breaker.Counts) { mo.changes[to].Add(1) }),
	})
	breg, err := bm.Observe(b)
	if err != nil {
		t.Fatal(err)
	}
	defer breg.Unregister()

	lm, err := ctxsyncotel.NewLimiterMetrics("l", mp)
	if err != nil {
		t.Fatal(err)
	}
	tally := &ratelimit.Tally{OnWait: lm.OnWait(func(time.Duration, error) { mo.limiterWaits.Add(1) })}
	limiter := tally.Wrap(ratelimit.NewTokenBucket(500, 2))
	lreg, err := lm.Observe(tally)
	if err != nil {
		t.Fatal(err)
	}
	defer lreg.Unregister()

	var held []*pool.Resource[int]
	defer func() {
		for _, res := range held {
			res.Release()
		}
	}()
	for _, op := range script {
		arg := time.Duration(op>>4) * time.Millisecond / 2 // 0 to 7.5ms
		switch op % 8 {
		case 0:
			ctx, cancel := context.WithTimeout(context.Background(), arg)
			if res, err := p.Acquire(ctx); err == nil {
				held = append(held, res)
			}
			cancel()
		case 1, 2:
			if len(held) > 0 {
				if op%8 == 1 {
					held[0].Release()
				} else {
					held[0].Destroy()
				}
				held = held[1:]
			}
		case 3:
			_ = b.Execute(context.Background(), func(context.Context) error {
				time.Sleep(arg)
				if op&0x40 != 0 {
					return errDown
				}
				return nil
			})
		case 4:
			limiter.AllowN(1)
		case 5:
			ctx, cancel := context.WithTimeout(context.Background(), arg)
			_ = limiter.WaitN(ctx, 1)
			cancel()
		case 6:
			synctest.Wait() // a New that outlived its Acquire settles first
			checkModel(t, collect(t, r), &mo, p, b, tally)
		case 7:
			failNew.Store(op&0x10 != 0)
			time.Sleep(arg)
		}
	}
	synctest.Wait()
	checkModel(t, collect(t, r), &mo, p, b, tally)
}

func checkModel(t *testing.T, c collected, mo *model, p *pool.Pool[int], b *breaker.Breaker, tally *ratelimit.Tally) {
	t.Helper()
	// Sync counters show a series once it has counted something.
	count := func(name string, kvs ...attribute.KeyValue) int64 {
		var n int64
		if m, ok := c[name]; ok {
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if matches(dp.Attributes, kvs) {
					n += dp.Value
				}
			}
		}
		return n
	}
	s := p.Stats()
	for _, w := range []struct {
		name      string
		kvs       []attribute.KeyValue
		got, want int64
	}{
		{"wait_time count", nil, int64(c.hist(t, "db.client.connection.wait_time").Count), mo.poolWaits.Load()},
		{"create_time count", nil, int64(c.hist(t, "db.client.connection.create_time").Count), mo.creates.Load()},
		{"timeouts", nil, count("db.client.connection.timeouts"), mo.timeouts.Load()},
		{"created", nil, c.point(t, "ctxsync.pool.connection.created"), s.Created},
		{"acquires", nil, c.point(t, "ctxsync.pool.acquires"), s.AcquireCount},
		{"idle", nil, c.point(t, "db.client.connection.count", idle), int64(s.Idle)},
		{"used", nil, c.point(t, "db.client.connection.count", used), int64(s.InUse)},
		{"closed destroy", nil, c.point(t, "ctxsync.pool.connection.closed", reason("destroy")), s.ClosedDestroy},
		{"limiter waits", nil, int64(c.hist(t, "ctxsync.ratelimit.wait.duration", waitEnd("taken")).Count +
			c.hist(t, "ctxsync.ratelimit.wait.duration", waitEnd("failed")).Count), mo.limiterWaits.Load()},
		{"limiter allowed", nil, c.point(t, "ctxsync.ratelimit.decisions", decision("allowed")), tally.Counts().Allowed},
		{"limiter refused", nil, c.point(t, "ctxsync.ratelimit.decisions", decision("refused")), tally.Counts().Refused},
	} {
		if w.got != w.want {
			t.Errorf("%s = %d, want %d", w.name, w.got, w.want)
		}
	}
	total := b.Metrics().Total
	for o, want := range map[breaker.Outcome]int64{
		breaker.Success: total.Successes, breaker.Failure: total.Failures,
		breaker.Ignored: total.Ignored, breaker.Rejected: total.Rejected,
	} {
		if mo.calls[o].Load() != want {
			t.Errorf("the model has %d calls %s, Total %d", mo.calls[o].Load(), o, want)
		}
		if got := c.point(t, "ctxsync.breaker.calls", outcome(o.String())); got != want {
			t.Errorf("calls{%s} = %d, want %d", o, got, want)
		}
		if o != breaker.Rejected {
			if got := int64(c.hist(t, "ctxsync.breaker.call.duration", outcome(o.String())).Count); got != want {
				t.Errorf("call.duration{%s} count = %d, want %d", o, got, want)
			}
		}
	}
	now := b.State()
	for st := breaker.Closed; st <= breaker.HalfOpen; st++ {
		if got := count("ctxsync.breaker.state_changes", state(st.String())); got != mo.changes[st].Load() {
			t.Errorf("state_changes{%s} = %d, want %d", st, got, mo.changes[st].Load())
		}
		want := int64(0)
		if st == now {
			want = 1
		}
		if got := c.point(t, "ctxsync.breaker.state", state(st.String())); got != want {
			t.Errorf("state{%s} = %d, want %d (State says %s)", st, got, want, now)
		}
	}
}
