package ctxsyncotel_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/pool"
)

var (
	poolName = attribute.String("db.client.connection.pool.name", "db")
	idle     = attribute.String("db.client.connection.state", "idle")
	used     = attribute.String("db.client.connection.state", "used")
)

func reason(r string) attribute.KeyValue { return attribute.String("ctxsync.pool.close.reason", r) }

var poolInstruments = map[string]struct {
	kind kind
	unit string
}{
	"db.client.connection.wait_time":          {histogram, "s"},
	"db.client.connection.create_time":        {histogram, "s"},
	"db.client.connection.timeouts":           {counter, "{timeout}"},
	"db.client.connection.count":              {upDown, "{connection}"},
	"db.client.connection.max":                {upDown, "{connection}"},
	"db.client.connection.idle.min":           {upDown, "{connection}"},
	"db.client.connection.pending_requests":   {upDown, "{request}"},
	"ctxsync.pool.connection.constructing":    {upDown, "{connection}"},
	"ctxsync.pool.connection.closing":         {upDown, "{connection}"},
	"ctxsync.pool.acquires":                   {counter, "{acquire}"},
	"ctxsync.pool.empty_acquires":             {counter, "{acquire}"},
	"ctxsync.pool.waits":                      {counter, "{acquire}"},
	"ctxsync.pool.canceled_acquires":          {counter, "{acquire}"},
	"ctxsync.pool.wait_duration":              {counter, "s"},
	"ctxsync.pool.connection.created":         {counter, "{connection}"},
	"ctxsync.pool.connection.create_failures": {counter, "{failure}"},
	"ctxsync.pool.connection.closed":          {counter, "{connection}"},
	"ctxsync.pool.connection.close_errors":    {counter, "{error}"},
}

// TestPoolMetrics runs a pool through a known sequence and checks every
// instrument: two Acquires that each wait 10ms for New, one that times out
// after 5ms on a full pool, one served by an idle resource at once, a
// Destroy and a Close.
func TestPoolMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		m, err := ctxsyncotel.NewPoolMetrics("db", mp, ctxsyncotel.WithAttributes(attribute.String("service", "x")))
		if err != nil {
			t.Fatal(err)
		}
		var mine struct{ acquire, create, release, close atomic.Int32 }
		hooks := m.Hooks(pool.Hooks{
			OnAcquire: func(pool.AcquireEvent) { mine.acquire.Add(1) },
			OnCreate:  func(pool.CreateEvent) { mine.create.Add(1) },
			OnRelease: func() { mine.release.Add(1) },
			OnClose:   func(pool.CloseReason) { mine.close.Add(1) },
		})
		p, err := pool.New(pool.Config[int]{
			New: func(ctx context.Context) (int, error) {
				time.Sleep(10 * time.Millisecond)
				return 1, nil
			},
			MaxSize: 2,
			Hooks:   hooks,
		})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := m.Observe(p)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		r1, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}

		errc := make(chan error)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
			defer cancel()
			_, err := p.Acquire(ctx)
			errc <- err
		}()
		synctest.Wait()
		c := collect(t, r)
		for _, w := range []struct {
			name string
			kvs  []attribute.KeyValue
			want int64
		}{
			{"db.client.connection.count", []attribute.KeyValue{idle}, 0},
			{"db.client.connection.count", []attribute.KeyValue{used}, 2},
			{"db.client.connection.pending_requests", nil, 1},
			{"db.client.connection.max", nil, 2},
			{"db.client.connection.idle.min", nil, 0},
		} {
			if got := c.point(t, w.name, append(w.kvs, poolName, attribute.String("service", "x"))...); got != w.want {
				t.Errorf("while one waits: %s%v = %d, want %d", w.name, w.kvs, got, w.want)
			}
		}
		if err := <-errc; err != context.DeadlineExceeded {
			t.Fatalf("Acquire on a full pool = %v, want %v", err, context.DeadlineExceeded)
		}

		r1.Release()
		c = collect(t, r)
		if got := c.point(t, "db.client.connection.count", idle); got != 1 {
			t.Errorf("after a Release: idle = %d, want 1", got)
		}
		if got := c.point(t, "db.client.connection.count", used); got != 1 {
			t.Errorf("after a Release: used = %d, want 1", got)
		}
		r3, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r2.Destroy()
		r3.Release()
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}

		c = collect(t, r)
		c.checkKinds(t, poolInstruments)
		for _, w := range []struct {
			name string
			kvs  []attribute.KeyValue
			want int64
		}{
			{"db.client.connection.timeouts", nil, 1},
			{"db.client.connection.count", []attribute.KeyValue{idle}, 0},
			{"db.client.connection.count", []attribute.KeyValue{used}, 0},
			{"db.client.connection.max", nil, 2},
			{"db.client.connection.pending_requests", nil, 0},
			{"ctxsync.pool.connection.constructing", nil, 0},
			{"ctxsync.pool.connection.closing", nil, 0},
			{"ctxsync.pool.acquires", nil, 3},
			{"ctxsync.pool.empty_acquires", nil, 3},
			{"ctxsync.pool.waits", nil, 3}, // each of the empty Acquires queued: two for New, one for a release
			{"ctxsync.pool.canceled_acquires", nil, 1},
			{"ctxsync.pool.connection.created", nil, 2},
			{"ctxsync.pool.connection.create_failures", nil, 0},
			{"ctxsync.pool.connection.close_errors", nil, 0},
			{"ctxsync.pool.connection.closed", []attribute.KeyValue{reason("idle")}, 0},
			{"ctxsync.pool.connection.closed", []attribute.KeyValue{reason("lifetime")}, 0},
			{"ctxsync.pool.connection.closed", []attribute.KeyValue{reason("health")}, 0},
			{"ctxsync.pool.connection.closed", []attribute.KeyValue{reason("destroy")}, 1},
			{"ctxsync.pool.connection.closed", []attribute.KeyValue{reason("pool")}, 1},
		} {
			if got := c.point(t, w.name, append(w.kvs, poolName)...); got != w.want {
				t.Errorf("%s%v = %d, want %d", w.name, w.kvs, got, w.want)
			}
		}
		if got := c.fpoint(t, "ctxsync.pool.wait_duration", poolName); !near(got, 0.025) {
			t.Errorf("ctxsync.pool.wait_duration = %v, want 0.025", got)
		}
		wait := c.hist(t, "db.client.connection.wait_time", poolName)
		// The Acquire served at once by an idle resource is not recorded.
		if wait.Count != 3 || !near(wait.Sum, 0.025) {
			t.Errorf("wait_time: count %d sum %v, want 3 and 0.025", wait.Count, wait.Sum)
		}
		if lo, ok := wait.Min.Value(); !ok || !near(lo, 0.005) {
			t.Errorf("wait_time: min %v, want 0.005 (the Acquire that timed out)", lo)
		}
		if want := ctxsyncotel.DefaultDurationBuckets(); !slices.Equal(wait.Bounds, want) {
			t.Errorf("wait_time: bounds %v, want %v", wait.Bounds, want)
		}
		create := c.hist(t, "db.client.connection.create_time", poolName)
		if create.Count != 2 || !near(create.Sum, 0.02) {
			t.Errorf("create_time: count %d sum %v, want 2 and 0.02", create.Count, create.Sum)
		}

		// Our hooks called the user's, each time.
		if a, cr, rl, cl := mine.acquire.Load(), mine.create.Load(), mine.release.Load(), mine.close.Load(); a != 4 || cr != 2 || rl != 2 || cl != 2 {
			t.Errorf("the user's hooks: %d acquires, %d creates, %d releases, %d closes; want 4, 2, 2, 2", a, cr, rl, cl)
		}

		// Unregistered, the pool is no longer read; the hooks' instruments
		// stay.
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
		c = collect(t, r)
		if n := c.points("db.client.connection.count"); n != 0 {
			t.Errorf("after Unregister: %d points of db.client.connection.count, want 0", n)
		}
		if got := c.hist(t, "db.client.connection.wait_time", poolName).Count; got != 3 {
			t.Errorf("after Unregister: wait_time count %d, want 3", got)
		}
	})
}

// TestPoolMetricsCreateFailures: a New that fails counts in
// create_failures, not in create_time; a New under way counts in
// constructing.
func TestPoolMetricsCreateFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		m, err := ctxsyncotel.NewPoolMetrics("db", mp)
		if err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		p, err := pool.New(pool.Config[int]{
			New: func(ctx context.Context) (int, error) {
				<-gate
				return 0, errors.New("refused")
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
		defer reg.Unregister()
		errc := make(chan error)
		go func() {
			_, err := p.Acquire(context.Background())
			errc <- err
		}()
		synctest.Wait()
		c := collect(t, r)
		if got := c.point(t, "ctxsync.pool.connection.constructing"); got != 1 {
			t.Errorf("constructing = %d, want 1", got)
		}
		close(gate)
		if err := <-errc; err == nil {
			t.Fatal("Acquire with a failing New = nil")
		}
		c = collect(t, r)
		if got := c.point(t, "ctxsync.pool.connection.create_failures"); got != 1 {
			t.Errorf("create_failures = %d, want 1", got)
		}
		if got := c.point(t, "ctxsync.pool.connection.created"); got != 0 {
			t.Errorf("created = %d, want 0", got)
		}
		if got := c.hist(t, "db.client.connection.create_time").Count; got != 0 {
			t.Errorf("create_time count = %d, want 0", got)
		}
		if got := c.hist(t, "db.client.connection.wait_time").Count; got != 1 {
			t.Errorf("wait_time count = %d, want 1 (failed Acquires that waited count)", got)
		}
		if n := c.points("db.client.connection.timeouts"); n != 0 {
			t.Errorf("timeouts: %d points, want none", n)
		}
	})
}
