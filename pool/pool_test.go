package pool

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/breaker"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// conn is a fake connection. The ledger checks that every conn made is closed
// exactly once, and that no more than max are alive at once.
type conn struct {
	id      int
	healthy atomic.Bool
}

type ledger struct {
	mu      sync.Mutex
	next    int
	alive   map[int]bool
	closed  map[int]int
	maxLive int
	fail    atomic.Bool // make New fail
	block   chan struct{}
	made    atomic.Int32
}

func newLedger() *ledger {
	return &ledger{alive: map[int]bool{}, closed: map[int]int{}}
}

func (l *ledger) new(ctx context.Context) (*conn, error) {
	if l.block != nil {
		select {
		case <-l.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if l.fail.Load() {
		return nil, errors.New("backend down")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.alive[l.next] = true
	l.maxLive = max(l.maxLive, len(l.alive))
	l.made.Add(1)
	c := &conn{id: l.next}
	c.healthy.Store(true)
	return c, nil
}

func (l *ledger) close(c *conn) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed[c.id]++
	delete(l.alive, c.id)
	return nil
}

// check verifies that every conn made was closed exactly once.
func (l *ledger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Empty(t, l.alive, "conns left open")
	for id := 1; id <= l.next; id++ {
		require.Equal(t, 1, l.closed[id], "conn %d closed %d times", id, l.closed[id])
	}
}

func (l *ledger) config(max int) Config[*conn] {
	return Config[*conn]{New: l.new, Close: l.close, MaxSize: max}
}

func mustNew[T any](t *testing.T, cfg Config[T]) *Pool[T] {
	t.Helper()
	p, err := New(cfg)
	require.NoError(t, err)
	return p
}

func TestAcquireReleaseReuse(t *testing.T) {
	l := newLedger()
	p := mustNew(t, l.config(3))
	ctx := context.Background()
	a, err := p.Acquire(ctx)
	require.NoError(t, err)
	b, err := p.Acquire(ctx)
	require.NoError(t, err)
	require.NotEqual(t, a.Value().id, b.Value().id)
	a.Release()
	b.Release()
	c, err := p.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, b.Value().id, c.Value().id, "not the warmest (last released)")
	c.Release()
	s := p.Stats()
	require.Equal(t, 2, s.Idle)
	require.Equal(t, 0, s.InUse)
	require.Equal(t, 2, s.Total)
	require.Equal(t, 3, s.Max)
	require.Equal(t, int64(2), s.Created)
	require.Equal(t, int64(3), s.AcquireCount)
	require.NoError(t, p.Close(ctx))
	l.check(t)
}

// TestFIFOWaiters: with the pool full, waiters get released resources in the
// order they came.
func TestFIFOWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		p := mustNew(t, l.config(1))
		held, err := p.Acquire(t.Context())
		require.NoError(t, err)
		var order []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, name := range []string{"A", "B", "C"} {
			wg.Go(func() {
				r, err := p.Acquire(t.Context())
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				r.Release()
			})
			synctest.Wait()
		}
		_, ok := p.TryAcquire()
		require.False(t, ok, "TryAcquire overtook the waiters")
		held.Release()
		wg.Wait()
		require.Equal(t, []string{"A", "B", "C"}, order)
		s := p.Stats()
		// The first Acquire waited for New, and A, B and C for a release.
		require.Equal(t, int64(4), s.WaitCount)
		require.Equal(t, int64(1), s.Created, "one conn served everyone")
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

func TestHealthCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		var checks atomic.Int32
		cfg := l.config(2)
		cfg.HealthCheck = func(_ context.Context, c *conn) error {
			checks.Add(1)
			if !c.healthy.Load() {
				return errors.New("broken pipe")
			}
			return nil
		}
		p := mustNew(t, cfg)
		ctx := t.Context()
		r, err := p.Acquire(ctx)
		require.NoError(t, err)
		first := r.Value()
		r.Release()

		// Used a moment ago: no check.
		r, err = p.Acquire(ctx)
		require.NoError(t, err)
		require.Equal(t, int32(0), checks.Load())
		r.Release()

		// Idle for a while and broken: checked, closed, replaced.
		first.healthy.Store(false)
		time.Sleep(time.Second)
		r, err = p.Acquire(ctx)
		require.NoError(t, err)
		require.NotEqual(t, first.id, r.Value().id)
		require.Equal(t, int32(1), checks.Load())
		require.Equal(t, int64(1), p.Stats().ClosedHealth)
		r.Release()
		require.NoError(t, p.Close(ctx))
		l.check(t)
	})
}

// TestHealthCheckInBackground: a HealthCheck alone (no other timed setting,
// no HealthCheckPeriod) also runs in the background, every minute by
// default, and closes the idle resources that fail it before anyone asks.
func TestHealthCheckInBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(2)
		cfg.HealthCheck = func(_ context.Context, c *conn) error {
			if !c.healthy.Load() {
				return errors.New("broken pipe")
			}
			return nil
		}
		p := mustNew(t, cfg)
		r, err := p.Acquire(t.Context())
		require.NoError(t, err)
		c := r.Value()
		r.Release()
		c.healthy.Store(false)
		time.Sleep(time.Minute + time.Second)
		s := p.Stats()
		require.Equal(t, int64(1), s.ClosedHealth, "no background check in a minute")
		require.Zero(t, s.Idle)
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// TestHealthCheckTimeout: a check that hangs is cut at HealthCheckTimeout and
// counts against the resource, which is replaced.
func TestHealthCheckTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(1)
		cfg.HealthCheckTimeout = 2 * time.Second
		var hung atomic.Bool
		cfg.HealthCheck = func(ctx context.Context, _ *conn) error {
			if !hung.Swap(true) {
				<-ctx.Done() // the first check hangs
				return ctx.Err()
			}
			return nil
		}
		p := mustNew(t, cfg)
		r, err := p.Acquire(t.Context())
		require.NoError(t, err)
		first := r.Value().id
		r.Release()
		time.Sleep(time.Minute)
		start := time.Now()
		r, err = p.Acquire(t.Context())
		require.NoError(t, err)
		require.Equal(t, 2*time.Second, time.Since(start))
		require.NotEqual(t, first, r.Value().id, "kept the resource whose check hung")
		require.Equal(t, int64(1), p.Stats().ClosedHealth)
		r.Release()
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// TestCloseCancelsCreation: Close cancels the calls to New under way, which
// honour their ctx, and does not return before they have.
func TestCloseCancelsCreation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		l.block = make(chan struct{}) // New waits for this, or for its ctx
		p := mustNew(t, l.config(1))
		acquired := make(chan error, 1)
		go func() {
			_, err := p.Acquire(t.Context())
			acquired <- err
		}()
		synctest.Wait()
		require.Equal(t, 1, p.Stats().Constructing)
		require.NoError(t, p.Close(t.Context()))
		require.ErrorIs(t, <-acquired, ErrClosed)
		s := p.Stats()
		require.Zero(t, s.Constructing)
		require.Equal(t, int64(1), s.CreateFailures)
		require.Zero(t, l.made.Load())
		l.check(t)
	})
}

// TestHealthCheckCallerGivesUp: a check cut short by the caller's ctx is not
// held against the resource.
func TestHealthCheckCallerGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(1)
		cfg.HealthCheck = func(ctx context.Context, _ *conn) error {
			<-ctx.Done()
			return ctx.Err()
		}
		p := mustNew(t, cfg)
		r, err := p.Acquire(t.Context())
		require.NoError(t, err)
		r.Release()
		time.Sleep(time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err = p.Acquire(ctx)
		require.Equal(t, context.DeadlineExceeded, err)
		s := p.Stats()
		require.Equal(t, 1, s.Idle, "the resource was blamed for the caller's deadline")
		require.Equal(t, int64(0), s.ClosedHealth)
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

func TestIdleAndLifetimeEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(4)
		cfg.MaxIdleTime = time.Minute
		cfg.MaxLifetime = 10 * time.Minute
		cfg.HealthCheckPeriod = 10 * time.Second
		p := mustNew(t, cfg)
		ctx := t.Context()
		releaseAll(acquireN(t, p, 3))
		require.Equal(t, 3, p.Stats().Idle)
		time.Sleep(2 * time.Minute) // the sweep closes the idle ones
		synctest.Wait()
		s := p.Stats()
		require.Equal(t, 0, s.Idle)
		require.Equal(t, int64(3), s.ClosedIdle)

		// Lifetime: a resource kept busy is still renewed after MaxLifetime.
		r, err := p.Acquire(ctx)
		require.NoError(t, err)
		first := r.Value().id
		for range 30 {
			r.Release()
			time.Sleep(30 * time.Second)
			r, err = p.Acquire(ctx)
			require.NoError(t, err)
		}
		require.NotEqual(t, first, r.Value().id, "not renewed after 15 minutes")
		require.GreaterOrEqual(t, p.Stats().ClosedLifetime, int64(1))
		r.Release()
		require.NoError(t, p.Close(ctx))
		l.check(t)
	})
}

// TestLifetimeNoJitter: with NoLifetimeJitter, every resource lives exactly
// MaxLifetime.
func TestLifetimeNoJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		const n = 20
		cfg := l.config(n)
		cfg.MaxLifetime = 10 * time.Second
		cfg.MaxLifetimeJitter = NoLifetimeJitter
		p := mustNew(t, cfg)
		rs := acquireN(t, p, n)
		time.Sleep(cfg.MaxLifetime - time.Nanosecond)
		releaseAll(rs)
		require.Zero(t, p.Stats().ClosedLifetime, "a lifetime cut short")
		rs = acquireN(t, p, n)
		require.Equal(t, int64(n), p.Stats().Created, "idle ones not reused")
		time.Sleep(time.Nanosecond)
		releaseAll(rs)
		require.Equal(t, int64(n), p.Stats().ClosedLifetime, "a lifetime past MaxLifetime")
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// acquireN acquires n resources of p.
func acquireN(t *testing.T, p *Pool[*conn], n int) []*Resource[*conn] {
	t.Helper()
	rs := make([]*Resource[*conn], n)
	for i := range rs {
		r, err := p.Acquire(t.Context())
		require.NoError(t, err)
		rs[i] = r
	}
	return rs
}

// releaseAll releases every resource of rs.
func releaseAll(rs []*Resource[*conn]) {
	for _, r := range rs {
		r.Release()
	}
}

// TestLifetimeJitter: resources made together do not all expire together:
// each lives between (1-MaxLifetimeJitter) and 1 times MaxLifetime.
func TestLifetimeJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		const n = 20
		cfg := l.config(n)
		cfg.MaxLifetime = 10 * time.Second
		cfg.MaxLifetimeJitter = 0.5
		cfg.HealthCheckPeriod = 100 * time.Millisecond // the sweep closes expired idle ones
		p := mustNew(t, cfg)
		releaseAll(acquireN(t, p, n))
		time.Sleep(4900 * time.Millisecond)
		require.Zero(t, p.Stats().ClosedLifetime, "expired before (1-jitter)·MaxLifetime")
		time.Sleep(4900 * time.Millisecond)
		// Twenty lifetimes spread over 5s to 10s: that none ended by 9.8s
		// has odds of 0.04^20.
		closed := p.Stats().ClosedLifetime
		require.Positive(t, closed, "all expire at MaxLifetime: no jitter")
		time.Sleep(300 * time.Millisecond)
		require.Equal(t, int64(n), p.Stats().ClosedLifetime)
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

func TestMinIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(5)
		cfg.MinIdle = 3
		p := mustNew(t, cfg)
		synctest.Wait()
		require.Equal(t, 3, p.Stats().Idle, "not topped up at start")
		a, _ := p.Acquire(t.Context())
		b, _ := p.Acquire(t.Context())
		synctest.Wait()
		s := p.Stats()
		require.Equal(t, 3, s.Idle, "not topped up after Acquire")
		require.Equal(t, 5, s.Total)
		c, _ := p.Acquire(t.Context())
		synctest.Wait()
		require.Equal(t, 2, p.Stats().Idle, "MaxSize caps the refill")
		a.Release()
		b.Release()
		c.Release()
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// TestBreakerStopsCreationStorm: with the backend down, the breaker opens after
// a few failures and New is not called while it is open; it recovers.
func TestBreakerStopsCreationStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		l.fail.Store(true)
		var attempts atomic.Int32
		cfg := l.config(4)
		inner := cfg.New
		cfg.New = func(ctx context.Context) (*conn, error) { attempts.Add(1); return inner(ctx) }
		cfg.Breaker = breaker.New(breaker.Settings{FailureThreshold: 3, OpenTimeout: time.Second})
		p := mustNew(t, cfg)
		for range 3 {
			_, err := p.Acquire(t.Context())
			require.EqualError(t, err, "backend down")
		}
		for range 50 {
			_, err := p.Acquire(t.Context())
			require.True(t, errors.Is(err, breaker.ErrOpen), "Acquire = %v", err)
		}
		require.Equal(t, int32(3), attempts.Load(), "New called while the breaker was open")
		require.Equal(t, int64(53), p.Stats().CreateFailures)

		l.fail.Store(false)
		time.Sleep(time.Second)
		r, err := p.Acquire(t.Context())
		require.NoError(t, err, "no recovery")
		r.Release()
		require.Equal(t, breaker.Closed, cfg.Breaker.State())
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// TestNewFailureServesTheNextWaiter: when New fails for the oldest waiting
// Acquire, which gets the error, the place it held is free again, and the
// Acquires behind it get a call to New of their own rather than wait for a
// Release that may never come.
func TestNewFailureServesTheNextWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		p := mustNew(t, l.config(1))
		r, err := p.Acquire(t.Context())
		require.NoError(t, err)
		type result struct {
			r   *Resource[*conn]
			err error
		}
		results := make([]chan result, 3)
		for i := range results {
			results[i] = make(chan result, 1)
			go func() {
				r, err := p.Acquire(t.Context())
				results[i] <- result{r, err}
			}()
			synctest.Wait()
		}
		l.fail.Store(true)
		r.Destroy() // New is called for the oldest waiter, and fails
		synctest.Wait()
		require.EqualError(t, (<-results[0]).err, "backend down")
		require.EqualError(t, (<-results[1]).err, "backend down", "the next waiter got no call to New")
		require.EqualError(t, (<-results[2]).err, "backend down")

		l.fail.Store(false)
		r2, err := p.Acquire(t.Context())
		require.NoError(t, err)
		r2.Release()
		require.NoError(t, p.Close(t.Context()))
		require.Equal(t, int64(3), p.Stats().CreateFailures)
		l.check(t)
	})
}

// TestCreationOutlivesCaller: a caller that gives up returns at once; the
// resource made for it still joins the pool.
func TestCreationOutlivesCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		l.block = make(chan struct{})
		p := mustNew(t, l.config(2))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := p.Acquire(ctx)
		require.Equal(t, context.DeadlineExceeded, err)
		require.Equal(t, time.Second, time.Since(start), "the caller waited for New")
		require.Equal(t, 1, p.Stats().Constructing)
		close(l.block) // New finishes
		synctest.Wait()
		s := p.Stats()
		require.Equal(t, 1, s.Idle, "the new resource was lost")
		require.Equal(t, int64(1), s.CanceledAcquires)
		r, ok := p.TryAcquire()
		require.True(t, ok)
		r.Release()
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

func TestGracefulClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		p := mustNew(t, l.config(2))
		ctx := t.Context()
		out, _ := p.Acquire(ctx)
		idle, _ := p.Acquire(ctx)
		idle.Release()
		waiter := make(chan error, 1)
		go func() {
			r, err := p.Acquire(ctx) // the idle one
			if err == nil {
				_, err = p.Acquire(ctx) // the pool is full: it waits
				r.Release()
			}
			waiter <- err
		}()
		synctest.Wait()
		// out and idle waited for New; the third Acquire for a release.
		require.Equal(t, int64(3), p.Stats().WaitCount)

		closed := make(chan error, 1)
		go func() { closed <- p.Close(ctx) }()
		require.Equal(t, ErrClosed, <-waiter, "a waiter not released by Close")
		_, err := p.Acquire(ctx)
		require.Equal(t, ErrClosed, err)
		synctest.Wait()
		require.Zero(t, len(closed), "Close returned with a resource out")

		time.Sleep(time.Hour)
		out.Release() // closed on return
		require.NoError(t, <-closed)
		require.NoError(t, p.Close(ctx), "a second Close")
		require.Equal(t, int64(2), p.Stats().ClosedPool)
		l.check(t)
	})
}

func TestCloseTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		p := mustNew(t, l.config(2))
		out, _ := p.Acquire(t.Context())
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		require.Equal(t, context.DeadlineExceeded, p.Close(ctx))
		require.Equal(t, int64(1), p.Stats().ClosedPool)
		out.Release() // closed already: nothing happens
		out.Destroy()
		l.check(t)
	})
}

func TestLeakReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		leaks := make(chan Leak, 1)
		cfg := l.config(1)
		cfg.LeakThreshold = time.Minute
		cfg.OnLeak = func(lk Leak) { leaks <- lk }
		p := mustNew(t, cfg)
		r, err := p.Acquire(t.Context())
		require.NoError(t, err)
		time.Sleep(30 * time.Second)
		r.Release() // in time: no report
		r, err = p.Acquire(t.Context())
		require.NoError(t, err)
		time.Sleep(2 * time.Minute)
		lk := <-leaks
		require.Equal(t, time.Minute, lk.Held)
		require.Contains(t, lk.Stack, "TestLeakReport", "the acquirer's stack")
		r.Release()
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

func TestReleaseTwicePanics(t *testing.T) {
	l := newLedger()
	p := mustNew(t, l.config(1))
	r, err := p.Acquire(context.Background())
	require.NoError(t, err)
	r.Release()
	require.PanicsWithValue(t, "pool: Release of a resource not acquired (released already?)", r.Release)
	require.PanicsWithValue(t, "pool: Destroy of a resource not acquired (released already?)", r.Destroy)
	r, _ = p.Acquire(context.Background()) // the pool still works
	r.Destroy()
	require.Equal(t, int64(1), p.Stats().ClosedDestroy)
	require.NoError(t, p.Close(context.Background()))
	l.check(t)
}

func TestTryAcquireAndWith(t *testing.T) {
	l := newLedger()
	p := mustNew(t, l.config(2))
	_, ok := p.TryAcquire()
	require.False(t, ok, "TryAcquire made a resource")
	require.Equal(t, int32(0), l.made.Load())

	var id int
	require.NoError(t, p.With(context.Background(), func(c *conn) error { id = c.id; return nil }))
	r, ok := p.TryAcquire()
	require.True(t, ok)
	require.Equal(t, id, r.Value().id)
	r.Release()

	boom := errors.New("boom")
	require.Equal(t, boom, p.With(context.Background(), func(*conn) error { return boom }))
	require.Equal(t, 1, p.Stats().Idle, "an error released the resource")
	require.PanicsWithValue(t, "kaboom", func() {
		_ = p.With(context.Background(), func(*conn) error { panic("kaboom") })
	})
	require.Equal(t, 0, p.Stats().Idle, "a panic destroys the resource")
	require.NoError(t, p.Close(context.Background()))
	l.check(t)
}

func TestDoneContext(t *testing.T) {
	l := newLedger()
	p := mustNew(t, l.config(1))
	r, _ := p.Acquire(context.Background())
	r.Release()
	ctx := testutil.Cancelled()
	_, err := p.Acquire(ctx)
	require.Equal(t, context.Canceled, err)
	require.Equal(t, 1, p.Stats().Idle, "a failed Acquire took a resource")
	require.Equal(t, context.Canceled, p.With(ctx, func(*conn) error { panic("called") }))
	require.PanicsWithValue(t, "pool: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_, _ = p.Acquire(nil)
	})
	require.NoError(t, p.Close(context.Background()))
	l.check(t)
}

func TestBadConfig(t *testing.T) {
	newFn := func(context.Context) (int, error) { return 0, nil }
	for _, cfg := range []Config[int]{
		{MaxSize: 1},
		{New: newFn},
		{New: newFn, MaxSize: -1},
		{New: newFn, MaxSize: 2, MinIdle: 3},
		{New: newFn, MaxSize: 2, MinIdle: -1},
		{New: newFn, MaxSize: 2, MaxIdleTime: -time.Second},
		{New: newFn, MaxSize: 2, MaxLifetime: -1},
		{New: newFn, MaxSize: 2, HealthCheckTimeout: -1},
		{New: newFn, MaxSize: 2, HealthCheckPeriod: -1},
		{New: newFn, MaxSize: 2, MaxLifetimeJitter: 2},
		{New: newFn, MaxSize: 2, MaxLifetimeJitter: -0.5},
		{New: newFn, MaxSize: 2, MaxLifetimeJitter: NoLifetimeJitter - 1},
		{New: newFn, MaxSize: 2, MaxLifetimeJitter: math.NaN()}, // every lifetime would end at once
		{New: newFn, MaxSize: 2, LeakThreshold: time.Second},
		// A Breaker not made by breaker.New panics at its first use, in the
		// goroutine of a call to New: with nobody waiting (MinIdle), that
		// ended the program.
		{New: newFn, MaxSize: 2, Breaker: new(breaker.Breaker)},
		{New: newFn, MaxSize: 2, MinIdle: 1, Breaker: &breaker.Breaker{}},
	} {
		p, err := New(cfg)
		require.Nil(t, p)
		require.ErrorIs(t, err, errConfig, "%+v", cfg)
		require.True(t, strings.HasPrefix(err.Error(), "pool: bad Config: "), err.Error())
	}
}

// TestHandoffRacesCancel: a resource handed to a waiter as its ctx ends goes
// to the next waiter or back to the pool; never lost.
func TestHandoffRacesCancel(t *testing.T) {
	l := newLedger()
	p := mustNew(t, l.config(1))
	for range testutil.HammerRounds(500) {
		held, err := p.Acquire(context.Background())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		a := make(chan error, 1)
		go func() {
			r, err := p.Acquire(ctx)
			if err == nil {
				r.Release()
			}
			a <- err
		}()
		go cancel()
		held.Release()
		<-a
		r, err := p.Acquire(context.Background())
		require.NoError(t, err, "the resource was lost")
		r.Release()
		cancel()
	}
	require.Equal(t, int64(1), p.Stats().Created)
	require.NoError(t, p.Close(context.Background()))
	l.check(t)
}

// TestHandoffAsCtxEnds makes that race happen for sure: on one processor,
// in a synctest bubble, the waiter's ctx ends and the resource is handed to
// it before it runs again. It must pass the resource to the Acquire behind it.
func TestHandoffAsCtxEnds(t *testing.T) {
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		p := mustNew(t, l.config(1))
		held, err := p.Acquire(t.Context())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		first, second := make(chan error, 1), make(chan *Resource[*conn], 1)
		go func() {
			_, err := p.Acquire(ctx)
			first <- err
		}()
		synctest.Wait()
		go func() {
			r, err := p.Acquire(t.Context())
			assert.NoError(t, err)
			second <- r
		}()
		synctest.Wait()
		cancel()
		held.Release() // to the first waiter, whose ctx has just ended
		require.Equal(t, context.Canceled, <-first)
		r := <-second // a lost resource would leave it waiting: the bubble's deadlock
		require.Equal(t, held.Value(), r.Value())
		r.Release()
		s := p.Stats()
		require.Equal(t, int64(1), s.CanceledAcquires)
		require.Equal(t, 1, s.Idle)
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// TestHammerPool: many goroutines, random cancellation, random failures of New
// and of health checks, random Destroys. Never more than MaxSize alive, and
// after Close every conn made has been closed exactly once.
func TestHammerPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		const maxSize = 4
		cfg := l.config(maxSize)
		inner := cfg.New
		var rmu sync.Mutex
		r0 := rand.New(rand.NewPCG(7, 7))
		cfg.New = func(ctx context.Context) (*conn, error) {
			rmu.Lock()
			failIt, pause := r0.IntN(5) == 0, time.Duration(r0.IntN(5))*time.Millisecond
			rmu.Unlock()
			time.Sleep(pause)
			if failIt {
				return nil, errors.New("flaky")
			}
			return inner(ctx)
		}
		cfg.HealthCheck = func(context.Context, *conn) error {
			rmu.Lock()
			defer rmu.Unlock()
			if r0.IntN(10) == 0 {
				return errors.New("stale")
			}
			return nil
		}
		cfg.HealthCheckSkip = -1
		cfg.MaxLifetime = 50 * time.Millisecond
		cfg.MinIdle = 1
		cfg.HealthCheckPeriod = 20 * time.Millisecond
		cfg.Name = "hammer" // every event carries it, whoever tells it
		told := toldHooks{name: cfg.Name}
		var pp atomic.Pointer[Pool[*conn]]
		cfg.Hooks = told.hooks(&pp)
		p := mustNew(t, cfg)
		pp.Store(p)
		var wg sync.WaitGroup
		var acquired, canceled atomic.Int64
		for g := range 16 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 8))
				for range testutil.HammerRounds(40) {
					a, c := churn(t, p, r, 10, 6)
					if a {
						acquired.Add(1)
					}
					if c {
						canceled.Add(1)
					}
				}
			})
		}
		wg.Wait()
		s := p.Stats()
		require.LessOrEqual(t, s.Total, maxSize)
		require.NoError(t, p.Close(t.Context()))
		// Close does not wait for the goroutine of a call to New to tell
		// OnCreate (see Hooks): the hooks are counted once it has.
		synctest.Wait()
		// The counters match what the callers saw, and every resource made
		// is closed under one of the Closed counters.
		s = p.Stats()
		require.Equal(t, acquired.Load(), s.AcquireCount, "AcquireCount: %+v", s)
		require.Equal(t, canceled.Load(), s.CanceledAcquires, "CanceledAcquires: %+v", s)
		require.Equal(t, s.Created, s.ClosedIdle+s.ClosedLifetime+s.ClosedHealth+s.ClosedDestroy+s.ClosedPool, "%+v", s)
		requireToldAddsUp(t, p, &told, int64(16*testutil.HammerRounds(40)))
		l.check(t)
		require.LessOrEqual(t, l.maxLive, maxSize, "more than MaxSize alive")
		require.Greater(t, l.made.Load(), int32(maxSize))
	})
}

// churn is one turn of a hammer test's goroutine: Acquire with a timeout of
// up to maxWaitMs milliseconds, hold the resource for up to 2, then destroy it
// one time in destroyEvery and release it otherwise. It tells what the
// Acquire returned: a resource, or the end of a ctx that was live at the call
// (in a bubble: a timeout above 0), which Stats counts in CanceledAcquires.
func churn(t *testing.T, p *Pool[*conn], r *rand.Rand, maxWaitMs, destroyEvery int) (acquired, canceled bool) {
	wait := time.Duration(r.IntN(maxWaitMs)) * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	res, err := p.Acquire(ctx)
	cancel()
	if err != nil {
		return false, wait > 0 && errors.Is(err, context.DeadlineExceeded)
	}
	time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
	if r.IntN(destroyEvery) == 0 {
		res.Destroy()
	} else {
		res.Release()
	}
	return true, false
}

// TestCloseTimeoutThenGrantAbandoned: a resource handed to a waiting Acquire
// as its ctx ended, and then closed by a Close that gave up waiting for it, is
// closed once. The Acquire, settling its wait after Close, must not hand it
// on, or close it, a second time. The interleaving is made by hand: the test
// plays the waiting Acquire.
func TestCloseTimeoutThenGrantAbandoned(t *testing.T) {
	l := newLedger()
	p := mustNew(t, l.config(1))
	r, err := p.Acquire(t.Context())
	require.NoError(t, err)

	p.q.Lock()
	w := p.q.Push(handoff[*conn]{}) // an Acquire waits for r
	p.q.Unlock()
	_, ok := p.q.Wait(testutil.Cancelled().Done(), w) // and its ctx ends,
	require.False(t, ok)
	r.Release() // as r is handed to it.

	// Close gives up waiting for r, now the waiter's, and closes it.
	require.Equal(t, context.Canceled, p.Close(testutil.Cancelled()))

	p.abandon(w) // the waiter settles its wait at last
	l.check(t)
	s := p.Stats()
	require.Zero(t, s.InUse, "%+v", s)
	require.Zero(t, s.Total, "%+v", s)
	require.Equal(t, int64(1), s.AcquireCount, "only the first Acquire took a resource: %+v", s)
}

// TestCloseTimeoutDuringHealthCheck: a Close that gives up waiting leaves a
// resource under a health check to the check, so that Config.Close never runs
// on a value under Config.HealthCheck; the end of the check closes it, once,
// whether the check was an Acquire's or the background sweep's, and whatever
// it says.
func TestCloseTimeoutDuringHealthCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sweep   bool // the background sweep checks it, not an Acquire
		healthy bool
	}{
		{"acquire/healthy", false, true},
		{"acquire/broken", false, false},
		{"sweep/healthy", true, true},
		{"sweep/broken", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLedger()
				cfg := l.config(1)
				checking, finish := make(chan struct{}), make(chan struct{})
				cfg.HealthCheck = func(context.Context, *conn) error {
					close(checking)
					<-finish // a check that ignores its ctx
					if !tc.healthy {
						return errors.New("broken pipe")
					}
					return nil
				}
				if tc.sweep {
					cfg.HealthCheckPeriod = time.Minute
				}
				p := mustNew(t, cfg)
				r, err := p.Acquire(t.Context())
				require.NoError(t, err)
				r.Release()

				acquired := make(chan error, 1)
				if tc.sweep {
					time.Sleep(time.Minute) // the sweep takes it for a check
				} else {
					time.Sleep(time.Second) // idle long enough to be checked
					go func() {
						r, err := p.Acquire(t.Context())
						if err == nil {
							r.Release() // closed by Close already: does nothing
						}
						acquired <- err
					}()
				}
				<-checking

				closed := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(t.Context(), time.Second)
					defer cancel()
					closed <- p.Close(ctx)
				}()
				time.Sleep(2 * time.Second) // Close gives up
				synctest.Wait()
				l.mu.Lock()
				require.Zero(t, l.closed[1], "closed under its health check")
				l.mu.Unlock()
				close(finish)
				require.Equal(t, context.DeadlineExceeded, <-closed)
				if !tc.sweep {
					require.ErrorIs(t, <-acquired, ErrClosed, "handed a closed resource")
				}
				synctest.Wait()
				l.check(t)
				s := p.Stats()
				require.Zero(t, s.InUse)
				require.Zero(t, s.Total)
			})
		})
	}
}

// TestSweepHandsCheckedToWaiter: a resource that passes the background check
// while an Acquire waits goes to that Acquire, acquired like any other.
func TestSweepHandsCheckedToWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(1)
		checking, finish := make(chan struct{}), make(chan struct{})
		var checks atomic.Int32
		cfg.HealthCheck = func(context.Context, *conn) error {
			if checks.Add(1) == 1 {
				close(checking)
				<-finish
			}
			return nil
		}
		cfg.HealthCheckPeriod = time.Minute
		p := mustNew(t, cfg)
		r, err := p.Acquire(t.Context())
		require.NoError(t, err)
		r.Release()
		time.Sleep(time.Minute)
		<-checking // the sweep has the only resource

		got := make(chan *Resource[*conn])
		go func() {
			r, err := p.Acquire(t.Context())
			assert.NoError(t, err)
			got <- r
		}()
		synctest.Wait() // the Acquire waits: the pool is full
		require.Equal(t, 1, p.Stats().InUse)
		close(finish)
		r = <-got
		require.Equal(t, 1, r.Value().id)
		r.Release()
		require.Equal(t, 1, p.Stats().Idle)
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// TestHammerPoolCloseMidway: Close gives up waiting while goroutines still
// acquire, release and destroy, and health checks that ignore their ctx are
// under way, in Acquires and in the background. Every resource is still
// closed exactly once, and nothing is left.
func TestHammerPoolCloseMidway(t *testing.T) {
	for seed := range uint64(testutil.HammerRounds(20)) {
		synctest.Test(t, func(t *testing.T) {
			l := newLedger()
			cfg := l.config(4) // more than the goroutines: resources go idle, and are checked
			var rmu sync.Mutex
			r0 := rand.New(rand.NewPCG(seed, 9))
			cfg.HealthCheck = func(context.Context, *conn) error {
				rmu.Lock()
				pause, fail := time.Duration(r0.IntN(4))*time.Millisecond, r0.IntN(4) == 0
				rmu.Unlock()
				time.Sleep(pause)
				if fail {
					return errors.New("stale")
				}
				return nil
			}
			cfg.HealthCheckSkip = -1
			cfg.HealthCheckPeriod = 3 * time.Millisecond
			cfg.MinIdle = 1
			cfg.LeakThreshold = 2 * time.Millisecond
			cfg.OnLeak = func(Leak) {}
			cfg.Name = "midway"
			told := toldHooks{name: cfg.Name}
			var pp atomic.Pointer[Pool[*conn]]
			cfg.Hooks = told.hooks(&pp)
			p := mustNew(t, cfg)
			pp.Store(p)
			var wg sync.WaitGroup
			var acquires atomic.Int64
			for g := range 3 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(g)))
					for range 30 {
						time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
						acquires.Add(1)
						churn(t, p, r, 6, 5)
					}
				})
			}
			time.Sleep(time.Duration(5+seed%10) * time.Millisecond)
			ctx, cancel := context.WithTimeout(t.Context(), time.Duration(seed%3)*time.Millisecond)
			err := p.Close(ctx)
			cancel()
			if err != nil {
				require.Equal(t, context.DeadlineExceeded, err)
			}
			wg.Wait()
			synctest.Wait()
			l.check(t)
			s := p.Stats()
			require.Zero(t, s.Total, "%+v", s)
			require.Zero(t, s.InUse)
			requireToldAddsUp(t, p, &told, acquires.Load())
		})
	}
}
