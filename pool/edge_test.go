package pool

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestZeroPoolPanics: the zero Pool panics at first use, saying to use New,
// rather than hang (Acquire) or dereference nil (Close).
func TestZeroPoolPanics(t *testing.T) {
	const msg = "pool: use New; the zero Pool is not usable"
	ctx := context.Background()
	for _, p := range []*Pool[int]{{}, nil} {
		require.PanicsWithValue(t, msg, func() { _, _ = p.Acquire(ctx) })
		require.PanicsWithValue(t, msg, func() { _, _ = p.TryAcquire() })
		require.PanicsWithValue(t, msg, func() { _ = p.With(ctx, func(int) error { return nil }) })
		require.PanicsWithValue(t, msg, func() { _ = p.Close(ctx) })
		require.PanicsWithValue(t, msg, func() { _ = p.Stats() })
	}
}

// TestZeroResourcePanics: a Resource not from Acquire panics on Release and
// Destroy, with a message, not a nil dereference; its Value is the zero T.
func TestZeroResourcePanics(t *testing.T) {
	var zero Resource[int]
	require.Zero(t, zero.Value())
	require.PanicsWithValue(t, "pool: Release of a Resource not from Acquire", zero.Release)
	require.PanicsWithValue(t, "pool: Destroy of a Resource not from Acquire", zero.Destroy)
	var nilRes *Resource[int]
	require.PanicsWithValue(t, "pool: Release of a Resource not from Acquire", nilRes.Release)
	require.PanicsWithValue(t, "pool: Destroy of a Resource not from Acquire", nilRes.Destroy)
	require.PanicsWithValue(t, "pool: Value of a nil Resource", func() { nilRes.Value() })
	require.PanicsWithValue(t, "pool: CreatedAt of a nil Resource", func() { nilRes.CreatedAt() })
}

// TestNilArguments: a nil ctx panics as the standard library's do, and so
// does a nil fn in With, before anything is acquired.
func TestNilArguments(t *testing.T) {
	l := newLedger()
	p := mustNew(t, l.config(1))
	//lint:file-ignore SA1012 a nil Context is the misuse under test
	require.PanicsWithValue(t, "pool: nil Context", func() { _ = p.Close(nil) })
	require.PanicsWithValue(t, "pool: nil Context", func() { _ = p.With(nil, func(*conn) error { return nil }) })
	require.PanicsWithValue(t, "pool: With of a nil fn", func() { _ = p.With(context.Background(), nil) })
	requireWhole(t, p)
	require.Zero(t, p.Stats().Total)
	require.NoError(t, p.Close(context.Background()))
	l.check(t)
}

// TestPoolMadeOutsideBubble: a pool made outside any synctest bubble, as a
// package-level pool is, works inside bubbles: Acquires that wait, calls to
// New, Close.
func TestPoolMadeOutsideBubble(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testPoolMadeOutsideBubble(t, false) })
	t.Run("background", func(t *testing.T) { testPoolMadeOutsideBubble(t, true) })
}

func testPoolMadeOutsideBubble(t *testing.T, background bool) {
	l := newLedger()
	cfg := l.config(2)
	if background {
		// The pool's own goroutine runs outside the bubbles, and sweeps
		// when nothing waits.
		cfg.HealthCheckPeriod = time.Hour
	}
	p := mustNew(t, cfg)
	outside := acquireN(t, p, 1)
	for range 3 {
		synctest.Test(t, func(t *testing.T) {
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for range 10 {
						r := acquireWithin(t, p)
						time.Sleep(time.Millisecond)
						r.Release()
					}
				})
			}
			wg.Wait()
		})
	}
	releaseAll(outside)
	synctest.Test(t, func(t *testing.T) {
		require.NoError(t, p.Close(t.Context()))
	})
	l.check(t)
}

// TestPoolMadeInsideBubble: a pool made inside a bubble, without background
// work, keeps working after the bubble ends, waiters and all.
func TestPoolMadeInsideBubble(t *testing.T) {
	l := newLedger()
	var p *Pool[*conn]
	synctest.Test(t, func(t *testing.T) {
		p = mustNew(t, l.config(2))
		r := acquireWithin(t, p)
		go r.Release()
		releaseAll(acquireN(t, p, 2)) // one waits for r
	})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				r := acquireWithin(t, p)
				r.Release()
			}
		})
	}
	wg.Wait()
	require.NoError(t, p.Close(context.Background()))
	l.check(t)
}

// TestResourceFromOtherClock: a resource made outside a bubble and found idle
// inside one has times from another clock, which seem far in the future
// there: its age is unknown, so it is health-checked rather than trusted.
func TestResourceFromOtherClock(t *testing.T) {
	l := newLedger()
	cfg := l.config(1)
	checks := 0
	cfg.HealthCheck = func(context.Context, *conn) error { checks++; return nil }
	cfg.HealthCheckPeriod = 1000 * time.Hour
	p := mustNew(t, cfg)
	acquireWithin(t, p).Release()
	synctest.Test(t, func(t *testing.T) {
		acquireWithin(t, p).Release()
	})
	require.Equal(t, 1, checks, "not checked inside the bubble")
	require.NoError(t, p.Close(context.Background()))
	l.check(t)
}

// TestHugeDurations: durations at math.MaxInt64 mean "never" and
// "always", not a wrap to the past, on the real clock and on a bubble's.
func TestHugeDurations(t *testing.T) {
	huge(t, false)
	synctest.Test(t, func(t *testing.T) { huge(t, true) })
	// The smallest: a check every time, and a jitter of all of it.
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(1)
		cfg.HealthCheckSkip = math.MinInt64
		cfg.MaxLifetime = 1
		cfg.MaxLifetimeJitter = 1
		checks := 0
		cfg.HealthCheck = func(context.Context, *conn) error { checks++; return nil }
		p := mustNew(t, cfg)
		acquireWithin(t, p).Release()
		acquireWithin(t, p).Release()
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

func huge(t *testing.T, bubbled bool) {
	l := newLedger()
	cfg := l.config(1)
	cfg.MaxLifetime = math.MaxInt64
	cfg.MaxLifetimeJitter = NoLifetimeJitter
	cfg.MaxIdleTime = math.MaxInt64
	cfg.HealthCheckPeriod = math.MaxInt64
	cfg.HealthCheckTimeout = math.MaxInt64
	cfg.HealthCheckSkip = math.MaxInt64
	cfg.LeakThreshold = math.MaxInt64
	cfg.OnLeak = func(Leak) { panic("leak reported") }
	cfg.HealthCheck = func(ctx context.Context, _ *conn) error { return ctx.Err() }
	p := mustNew(t, cfg)
	r := acquireWithin(t, p)
	if bubbled {
		time.Sleep(24 * time.Hour)
	}
	r.Release()
	r = acquireWithin(t, p)
	r.Release()
	s := p.Stats()
	require.Equal(t, int64(1), s.Created, "%+v", s)
	require.Zero(t, s.ClosedLifetime+s.ClosedIdle+s.ClosedHealth, "%+v", s)
	require.NoError(t, p.Close(t.Context()))
	l.check(t)
}

// TestNewCallsBackIntoPool: Config.New, HealthCheck and Close may use the
// pool: no lock of it is held while they run.
func TestNewCallsBackIntoPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(2)
		var p *Pool[*conn]
		cfg.New = func(ctx context.Context) (*conn, error) {
			_ = p.Stats()
			if r, ok := p.TryAcquire(); ok {
				r.Release()
			}
			return l.new(ctx)
		}
		cfg.HealthCheckSkip = -1
		cfg.HealthCheck = func(context.Context, *conn) error { _ = p.Stats(); return nil }
		cfg.Close = func(c *conn) error {
			if r, ok := p.TryAcquire(); ok {
				r.Release()
			}
			return l.close(c)
		}
		p = mustNew(t, cfg)
		releaseAll(acquireN(t, p, 2))
		acquireWithin(t, p).Destroy()
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// TestAcquireInsideNew: a New that waits in Acquire for the pool's only
// place, which its own call holds, holds up nobody but the caller that asked
// for it (which gives up) and Close, which cancels New's ctx and so ends the
// wait.
func TestAcquireInsideNew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p *Pool[int]
		p = mustNew(t, Config[int]{MaxSize: 1, New: func(ctx context.Context) (int, error) {
			r, err := p.Acquire(ctx)
			if err != nil {
				return 0, err
			}
			r.Release()
			return 1, nil
		}})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := p.Acquire(ctx)
		require.Equal(t, context.DeadlineExceeded, err)
		require.Equal(t, 1, p.Stats().Constructing)
		require.NoError(t, p.Close(t.Context()))
		require.Zero(t, p.Stats().Total)
	})
}

// TestCloseConcurrently: Close called by several goroutines at once, while a
// resource is out, returns in each once it is back, and closes it once.
func TestCloseConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		p := mustNew(t, l.config(2))
		r := acquireWithin(t, p)
		acquireWithin(t, p).Release()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() { require.NoError(t, p.Close(t.Context())) })
		}
		synctest.Wait()
		r.Release()
		wg.Wait()
		r.Release() // closed already: nothing happens
		require.Equal(t, int64(2), p.Stats().ClosedPool)
		l.check(t)
	})
}

// TestMaxSizeHuge: a MaxSize of math.MaxInt is a pool without a bound; sums
// against it do not wrap.
func TestMaxSizeHuge(t *testing.T) {
	l := newLedger()
	cfg := l.config(math.MaxInt)
	cfg.MinIdle = 2
	p := mustNew(t, cfg)
	releaseAll(acquireN(t, p, 5))
	s := p.Stats()
	require.Equal(t, math.MaxInt, s.Max)
	require.GreaterOrEqual(t, s.Idle, 5)
	require.NoError(t, p.Close(context.Background()))
	l.check(t)
}
