package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
)

// recorder keeps what a pool's Hooks were told, as lines.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

// settled is take once the bubble's goroutines are blocked: OnCreate is
// told by the goroutine that called New, after the Acquire it served has
// returned.
func (r *recorder) settled() []string {
	synctest.Wait()
	return r.take()
}

// take returns the lines told since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	return e
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func (r *recorder) hooks() Hooks {
	return Hooks{
		OnAcquire: func(e AcquireEvent) {
			r.add("acquire waited=%v wait=%v %s", e.Waited, e.Wait, errString(e.Err))
		},
		OnCreate:          func(e CreateEvent) { r.add("create %v %s", e.Duration, errString(e.Err)) },
		OnRelease:         func() { r.add("release") },
		OnClose:           func(reason CloseReason) { r.add("close %v", reason) },
		OnHealthCheckFail: func(err error) { r.add("check failed: %v", err) },
	}
}

// TestHooksTellEveryEvent drives a pool through each kind of event, in
// virtual time, and reads what its Hooks were told, in order.
func TestHooksTellEveryEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		l := newLedger()
		cfg := l.config(1)
		cfg.New = func(ctx context.Context) (*conn, error) {
			time.Sleep(2 * time.Second) // the backend takes its time
			return l.new(ctx)
		}
		cfg.HealthCheck = func(_ context.Context, c *conn) error {
			if !c.healthy.Load() {
				return errors.New("gone bad")
			}
			return nil
		}
		cfg.MaxLifetime = time.Hour
		cfg.MaxLifetimeJitter = NoLifetimeJitter
		cfg.Hooks = rec.hooks()
		p := mustNew(t, cfg)

		// The first Acquire waits for New.
		r, err := p.Acquire(t.Context())
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"create 2s ok", "acquire waited=true wait=2s ok"}, rec.settled())

		// A second one waits 3s for the first's Release.
		go func() {
			time.Sleep(3 * time.Second)
			r.Release()
		}()
		r, err = p.Acquire(t.Context())
		require.NoError(t, err)
		// Released by another goroutine: the two are told in either order.
		require.ElementsMatch(t, []string{"release", "acquire waited=true wait=3s ok"}, rec.settled())

		// One that gives up after a second; one whose ctx is done already.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err = p.Acquire(ctx)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		_, err = p.Acquire(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, []string{
			"acquire waited=true wait=1s context deadline exceeded",
			"acquire waited=false wait=0s context deadline exceeded",
		}, rec.settled())

		// An idle resource, taken at once: by Acquire and by TryAcquire.
		r.Release()
		r, err = p.Acquire(t.Context())
		require.NoError(t, err)
		r.Release()
		r, ok := p.TryAcquire()
		require.True(t, ok)
		require.Equal(t, []string{"release", "acquire waited=false wait=0s ok", "release", "acquire waited=false wait=0s ok"}, rec.settled())

		// Destroyed; then a new one fails its check at Acquire, after
		// being idle past HealthCheckSkip, and the next is made.
		r.Destroy()
		r = acquireWithin(t, p)
		r.Value().healthy.Store(false)
		r.Release()
		time.Sleep(time.Second)
		r = acquireWithin(t, p)
		// The creates are told by New's goroutine: their order against the
		// caller's events is not set.
		require.ElementsMatch(t, []string{
			"close destroy",
			"create 2s ok", "acquire waited=true wait=2s ok", "release",
			"close health", "check failed: gone bad", "create 2s ok", "acquire waited=true wait=2s ok",
		}, rec.settled())

		// Released past its lifetime: closed, not released.
		time.Sleep(time.Hour)
		r.Release()
		require.Equal(t, []string{"close lifetime"}, rec.settled())

		// New fails.
		l.fail.Store(true)
		_, err = p.Acquire(t.Context())
		require.ErrorContains(t, err, "backend down")
		require.ElementsMatch(t, []string{"create 2s backend down", "acquire waited=true wait=2s backend down"}, rec.settled())
		l.fail.Store(false)

		// Close closes the idle ones; Acquire then fails.
		acquireWithin(t, p).Release()
		rec.settled()
		require.NoError(t, p.Close(t.Context()))
		_, err = p.Acquire(t.Context())
		require.ErrorIs(t, err, ErrClosed)
		require.Equal(t, []string{"close pool", "acquire waited=false wait=0s " + ErrClosed.Error()}, rec.settled())
		l.check(t)
	})
}

// TestHooksBackgroundEvents: the sweep's closes and failed checks, and the
// calls to New for MinIdle, are told too.
func TestHooksBackgroundEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		l := newLedger()
		cfg := l.config(2)
		cfg.MinIdle = 1
		cfg.MaxIdleTime = 10 * time.Minute
		cfg.HealthCheckPeriod = time.Minute
		cfg.HealthCheck = func(_ context.Context, c *conn) error {
			if !c.healthy.Load() {
				return errors.New("gone bad")
			}
			return nil
		}
		cfg.Hooks = rec.hooks()
		p := mustNew(t, cfg)
		defer func() { require.NoError(t, p.Close(t.Context())) }()
		synctest.Wait()
		require.Equal(t, []string{"create 0s ok"}, rec.settled())

		r := acquireWithin(t, p)
		r.Value().healthy.Store(false)
		r.Release()
		time.Sleep(time.Minute)
		synctest.Wait()
		// The call to New for MinIdle, when the Acquire took the idle
		// one, runs beside the rest: its order against it is not set.
		require.ElementsMatch(t, []string{
			"acquire waited=false wait=0s ok", "create 0s ok", "release",
			"close health", "check failed: gone bad",
		}, rec.settled())

		time.Sleep(10 * time.Minute)
		synctest.Wait()
		require.ElementsMatch(t, []string{"close idle", "create 0s ok"}, rec.settled())
	})
}

// TestHooksPanicLeaveThePoolWhole: a hook that panics reaches the caller
// that ran it, and the pool keeps no slot: the resource an Acquire was
// about to return goes back first.
func TestHooksPanicLeaveThePoolWhole(t *testing.T) {
	for _, hook := range []string{"OnAcquire", "OnRelease", "OnClose", "OnHealthCheckFail"} {
		t.Run(hook, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLedger()
				cfg := l.config(1)
				var bad atomic.Bool
				boom := func() { panic("hook exploded") }
				switch hook {
				case "OnAcquire":
					cfg.Hooks.OnAcquire = func(AcquireEvent) { boom() }
				case "OnRelease":
					cfg.Hooks.OnRelease = boom
				case "OnClose":
					cfg.Hooks.OnClose = func(CloseReason) { boom() }
				case "OnHealthCheckFail":
					cfg.Hooks.OnHealthCheckFail = func(error) { boom() }
					// Only the check of the test's Acquire fails: one by
					// the pool's own sweep would run the hook in the
					// pool's goroutine, where a panic ends the program.
					cfg.HealthCheck = func(ctx context.Context, _ *conn) error {
						if ctx.Value(failCheck{}) != nil && bad.Swap(false) {
							return errors.New("bad")
						}
						return nil
					}
					cfg.HealthCheckSkip = -1
				}
				p := mustNew(t, cfg)
				defer p.Close(t.Context())
				use := func() {
					r, err := p.Acquire(t.Context())
					if err != nil {
						return
					}
					r.Release()
					if hook == "OnHealthCheckFail" {
						// An Acquire that finds the resource just checked by
						// the pool's sweep takes it unchecked: try again.
						for range 100 {
							bad.Store(true)
							r, err := p.Acquire(context.WithValue(t.Context(), failCheck{}, true))
							require.NoError(t, err)
							r.Release()
						}
					}
					if hook == "OnClose" {
						r, err = p.Acquire(t.Context())
						require.NoError(t, err)
						r.Destroy()
					}
				}
				for range 3 {
					require.PanicsWithValue(t, "hook exploded", use)
					requireWhole(t, p)
				}
				cfg.Hooks = Hooks{}
				require.NoError(t, p.Close(t.Context()))
				requireWhole(t, p)
				l.check(t)
			})
		})
	}
}

// failCheck marks the ctx of an Acquire whose health check is to fail.
type failCheck struct{}

// TestHooksCallThePool: hooks run without the pool's lock, so they may use
// it.
func TestHooksCallThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p *Pool[*conn]
		var seen []Stats
		l := newLedger()
		cfg := l.config(1)
		cfg.Hooks = Hooks{
			OnAcquire: func(AcquireEvent) { seen = append(seen, p.Stats()) },
			OnRelease: func() { seen = append(seen, p.Stats()) },
			OnCreate:  func(CreateEvent) { _ = p.Stats() },
			OnClose: func(CloseReason) {
				if r, ok := p.TryAcquire(); ok {
					r.Release()
				}
			},
		}
		p = mustNew(t, cfg)
		r := acquireWithin(t, p)
		r.Release()
		acquireWithin(t, p).Destroy()
		require.NoError(t, p.Close(t.Context()))
		require.Equal(t, 1, seen[0].InUse)
		require.Equal(t, 1, seen[1].Idle)
		l.check(t)
	})
}

// TestStatsWaiting counts the Acquires waiting.
func TestStatsWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		p := mustNew(t, l.config(1))
		r := acquireWithin(t, p)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if r, err := p.Acquire(ctx); err == nil {
					r.Release()
				}
			})
		}
		synctest.Wait()
		require.Equal(t, 3, p.Stats().Waiting)
		r.Release()
		synctest.Wait()
		require.Equal(t, 0, p.Stats().Waiting)
		r = acquireWithin(t, p)
		wg.Go(func() { _, _ = p.Acquire(ctx) })
		synctest.Wait()
		require.Equal(t, 1, p.Stats().Waiting)
		cancel()
		wg.Wait()
		require.Equal(t, 0, p.Stats().Waiting)
		r.Release()
		require.NoError(t, p.Close(t.Context()))
	})
}

// TestHooksAllocateNothing: with hooks set that allocate nothing themselves,
// an Acquire and a Release of an idle resource allocate nothing, as without.
func TestHooksAllocateNothing(t *testing.T) {
	var n int
	p := mustNew(t, Config[int]{
		New:     func(context.Context) (int, error) { return 1, nil },
		MaxSize: 1,
		Hooks: Hooks{
			OnAcquire: func(AcquireEvent) { n++ },
			OnRelease: func() { n++ },
		},
	})
	ctx := context.Background()
	r, err := p.Acquire(ctx)
	require.NoError(t, err)
	r.Release()
	allocs := testing.AllocsPerRun(100, func() {
		r, err := p.Acquire(ctx)
		if err != nil {
			panic(err)
		}
		r.Release()
	})
	require.Zero(t, allocs)
	require.Equal(t, 2+2*101, n) // AllocsPerRun runs it once more, to warm up
	require.NoError(t, p.Close(ctx))
}

func TestCloseReasonString(t *testing.T) {
	require.Equal(t, "idle", ClosedIdle.String())
	require.Equal(t, "pool", ClosedPool.String())
	require.Equal(t, "CloseReason(0)", CloseReason(0).String())
	require.Equal(t, "CloseReason(-1)", CloseReason(-1).String())
	require.Equal(t, "CloseReason(99)", CloseReason(99).String())
}

// TestCreateEventRefused: a call that Config.Breaker refuses is told as
// refused, New never called; one that New fails is not.
func TestCreateEventRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New(breaker.Settings{FailureThreshold: 1, OpenTimeout: time.Minute})
		told := make(chan CreateEvent, 2)
		calls := 0
		p := mustNew(t, Config[int]{
			New: func(context.Context) (int, error) {
				calls++
				return 0, errors.New("down")
			},
			MaxSize: 1,
			Breaker: b,
			Hooks:   Hooks{OnCreate: func(e CreateEvent) { told <- e }},
		})
		_, err := p.Acquire(t.Context())
		require.ErrorContains(t, err, "down")
		e := <-told
		require.False(t, e.Refused)
		require.Equal(t, breaker.Open, b.State())
		_, err = p.Acquire(t.Context())
		require.ErrorIs(t, err, breaker.ErrOpen)
		e = <-told
		require.True(t, e.Refused)
		require.ErrorIs(t, e.Err, breaker.ErrOpen)
		require.Equal(t, 1, calls)
		require.NoError(t, p.Close(t.Context()))
	})
}
