package pool

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestHealthCheckFailToldWhenClosedDuringCheck: a HealthCheck at Acquire
// that fails while Close runs is told to OnHealthCheckFail, as every failed
// check is, though the resource is then closed for the pool's Close.
func TestHealthCheckFailToldWhenClosedDuringCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		l := newLedger()
		cfg := l.config(1)
		cfg.HealthCheckSkip = -1
		checking, fail := make(chan struct{}), make(chan struct{})
		var block atomic.Bool
		cfg.HealthCheck = func(context.Context, *conn) error {
			if !block.Load() {
				return nil
			}
			close(checking)
			<-fail
			return errors.New("gone bad")
		}
		cfg.Hooks = rec.hooks()
		p := mustNew(t, cfg)
		acquireWithin(t, p).Release()
		synctest.Wait() // OnCreate is told after the Acquire returns
		rec.take()
		block.Store(true)
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := p.Acquire(t.Context())
			require.ErrorIs(t, err, ErrClosed)
		})
		<-checking
		wg.Go(func() { require.NoError(t, p.Close(t.Context())) })
		synctest.Wait()
		close(fail)
		wg.Wait()
		require.Equal(t, []string{"close pool", "check failed: gone bad", "acquire waited=false wait=0s pool: closed"}, rec.take())
		l.check(t)
	})
}

// TestHookCallsClose: a hook may call Close, with a ctx that never ends,
// where the event it is told of holds nothing of the pool: a failed check's
// resource, the other idle resources of a Close, are not waited for by it.
func TestHookCallsClose(t *testing.T) {
	for _, hook := range []string{"OnHealthCheckFail", "OnClose", "OnRelease", "OnCreate"} {
		t.Run(hook, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLedger()
				cfg := l.config(2)
				var p *Pool[*conn]
				var once atomic.Bool
				var closeErr error
				closed := make(chan struct{})
				closeIt := func() {
					if once.Swap(true) {
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
					defer cancel()
					closeErr = p.Close(ctx)
					close(closed)
				}
				var armed atomic.Bool
				switch hook {
				case "OnHealthCheckFail":
					cfg.HealthCheckSkip = -1
					cfg.HealthCheck = func(context.Context, *conn) error {
						if armed.Load() {
							return errors.New("gone bad")
						}
						return nil
					}
					cfg.Hooks.OnHealthCheckFail = func(error) { closeIt() }
				case "OnClose":
					cfg.Hooks.OnClose = func(CloseReason) {
						if armed.Load() {
							closeIt()
						}
					}
				case "OnRelease":
					cfg.Hooks.OnRelease = func() {
						if armed.Load() {
							closeIt()
						}
					}
				case "OnCreate":
					cfg.Hooks.OnCreate = func(CreateEvent) {
						if armed.Load() {
							closeIt()
						}
					}
				}
				p = mustNew(t, cfg)
				rs := acquireN(t, p, 2)
				releaseAll(rs)
				// OnCreate is told after the Acquire it served returns:
				// let the two calls' goroutines end before arming.
				synctest.Wait()
				armed.Store(true)
				switch hook {
				case "OnHealthCheckFail":
					_, err := p.Acquire(t.Context())
					require.ErrorIs(t, err, ErrClosed)
				case "OnClose":
					// The hook's Close runs while this one closes the
					// other idle resource.
					require.NoError(t, p.Close(t.Context()))
				case "OnRelease":
					acquireWithin(t, p).Release()
				case "OnCreate":
					r1, r2 := acquireWithin(t, p), acquireWithin(t, p)
					r1.Destroy()
					r, err := p.Acquire(t.Context())
					if err == nil {
						r.Release()
					}
					r2.Release()
				}
				<-closed
				require.NoError(t, closeErr)
				requireWhole(t, p)
				require.NoError(t, p.Close(t.Context()))
				l.check(t)
			})
		})
	}
}

// TestHookAcquireToldOfNewPanic: an Acquire that waited for a call to New
// that panicked, and panics with it, is told to OnAcquire too, with its
// wait: the waits told add up to Stats.WaitDuration.
func TestHookAcquireToldOfNewPanic(t *testing.T) {
	{
		synctest.Test(t, func(t *testing.T) {
			var told []AcquireEvent
			var mu sync.Mutex
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			p := mustNew(t, Config[int]{
				MaxSize: 1,
				New: func(context.Context) (int, error) {
					time.Sleep(time.Second)
					panic("New exploded")
				},
				Hooks: Hooks{OnAcquire: func(e AcquireEvent) {
					mu.Lock()
					defer mu.Unlock()
					told = append(told, e)
				}},
			})
			v := func() (v any) {
				defer func() { v = recover() }()
				_, _ = p.Acquire(ctx)
				return nil
			}()
			require.NotNil(t, v)
			err, ok := v.(error)
			require.True(t, ok, "Acquire panicked with %v", v)
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, told, 1)
			require.True(t, told[0].Waited)
			require.Equal(t, time.Second, told[0].Wait)
			require.Equal(t, err, told[0].Err)
			require.Equal(t, p.Stats().WaitDuration, told[0].Wait)
			require.NoError(t, p.Close(t.Context()))
		})
	}
}

// hooks returns Hooks that count what they are told in t, and call the pool
// in p back (Stats), as a hook may, once it is there: New's goroutine may
// tell of resources made for MinIdle before New returns.
func (t *toldHooks) hooks(p *atomic.Pointer[Pool[*conn]]) Hooks {
	count := func(f func(c *toldCounts)) {
		if p := p.Load(); p != nil {
			_ = p.Stats()
		}
		t.Lock()
		defer t.Unlock()
		f(&t.toldCounts)
	}
	return Hooks{
		OnAcquire: func(e AcquireEvent) {
			count(func(c *toldCounts) {
				if e.Name != t.name {
					c.misnamed++
				}
				if e.Err == nil {
					c.acquired++
				} else {
					c.acquireErrs++
				}
				if e.Waited {
					c.waited++
				}
				c.wait += e.Wait
			})
		},
		OnCreate: func(e CreateEvent) {
			count(func(c *toldCounts) {
				if e.Name != t.name {
					c.misnamed++
				}
				c.creates++
			})
		},
		OnRelease:         func() { count(func(c *toldCounts) { c.releases++ }) },
		OnClose:           func(r CloseReason) { count(func(c *toldCounts) { c.closed[r]++ }) },
		OnHealthCheckFail: func(error) { count(func(c *toldCounts) { c.checkFails++ }) },
	}
}

// requireToldAddsUp checks what the hooks of p, quiescent, were told against
// its Stats: acquires Acquires in all were made.
func requireToldAddsUp(t *testing.T, p *Pool[*conn], told *toldHooks, acquires int64) {
	t.Helper()
	s := p.Stats()
	told.Lock()
	c := told.snapshot()
	require.Equal(t, [...]int64{0, s.ClosedIdle, s.ClosedLifetime, s.ClosedHealth, s.ClosedDestroy, s.ClosedPool},
		c.closed, "the closes told to OnClose: %+v", s)
	require.Equal(t, s.Created+s.CreateFailures, c.creates, "the calls to New told to OnCreate: %+v", s)
	require.Equal(t, s.AcquireCount, c.acquired, "the Acquires told to OnAcquire: %+v", s)
	require.Equal(t, acquires, c.acquired+c.acquireErrs, "the Acquires told to OnAcquire: %+v", s)
	require.Equal(t, s.WaitDuration, c.wait, "the waits told to OnAcquire: %+v", s)
	require.Zero(t, c.misnamed, "events whose Name was not Config.Name %q", told.name)
	require.Equal(t, told.name, s.Name, "Stats.Name")
	// A check that fails as Close runs is told, its resource closed for
	// the pool.
	require.GreaterOrEqual(t, c.checkFails, s.ClosedHealth, "the failed checks told: %+v", s)
	require.LessOrEqual(t, c.checkFails, s.ClosedHealth+s.ClosedPool, "the failed checks told: %+v", s)
}

// TestBackgroundHookPanicEndsProgram: a hook that panics in the pool's own
// goroutine ends the program, as Hooks says: OnCreate of a call to New for
// MinIdle, OnHealthCheckFail and OnClose of the sweep.
func TestBackgroundHookPanicEndsProgram(t *testing.T) {
	if hook := os.Getenv("POOL_TEST_HOOK_PANIC"); hook != "" {
		synctest.Test(t, func(t *testing.T) {
			boom := func() { panic("hook exploded in " + hook) }
			cfg := Config[int]{MaxSize: 1, MinIdle: 1, HealthCheckPeriod: time.Minute,
				New: func(context.Context) (int, error) { return 1, nil }}
			switch hook {
			case "OnCreate":
				cfg.Hooks.OnCreate = func(CreateEvent) { boom() }
			case "OnHealthCheckFail":
				cfg.HealthCheck = func(context.Context, int) error { return errors.New("bad") }
				cfg.Hooks.OnHealthCheckFail = func(error) { boom() }
			case "OnClose":
				cfg.MaxIdleTime = time.Second
				cfg.Hooks.OnClose = func(CloseReason) { boom() }
			}
			p := mustNew(t, cfg)
			time.Sleep(time.Hour)
			_ = p.Close(t.Context())
		})
		return
	}
	for _, hook := range []string{"OnCreate", "OnHealthCheckFail", "OnClose"} {
		t.Run(hook, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBackgroundHookPanicEndsProgram$", "-test.count=1")
			cmd.Env = append(os.Environ(), "POOL_TEST_HOOK_PANIC="+hook)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the program went on: %s", out)
			require.Contains(t, string(out), "panic: hook exploded in "+hook)
		})
	}
}

// TestHooksPoolMadeOutsideBubble: a pool made outside a synctest bubble,
// used inside one, tells waits on the bubble's clock, exactly.
func TestHooksPoolMadeOutsideBubble(t *testing.T) {
	var rec recorder
	l := newLedger()
	cfg := l.config(1)
	cfg.Hooks = rec.hooks()
	p := mustNew(t, cfg)
	synctest.Test(t, func(t *testing.T) {
		r := acquireWithin(t, p)
		var wg sync.WaitGroup
		wg.Go(func() { acquireWithin(t, p).Destroy() })
		time.Sleep(3 * time.Second)
		r.Release()
		wg.Wait()
	})
	require.NoError(t, p.Close(context.Background()))
	require.ElementsMatch(t, []string{ // OnCreate in any order: New's goroutine tells it
		"create 0s ok", "acquire waited=true wait=0s ok", "release",
		"acquire waited=true wait=3s ok", "close destroy",
	}, rec.take())
	l.check(t)
}

// TestHooksTryAcquireAndWith: TryAcquire's OnAcquire that panics gives the
// resource back; With that finds its resource broken tells its close.
func TestHooksTryAcquireAndWith(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		l := newLedger()
		cfg := l.config(1)
		cfg.Hooks = rec.hooks()
		var explode atomic.Bool
		onAcquire := cfg.Hooks.OnAcquire
		cfg.Hooks.OnAcquire = func(e AcquireEvent) {
			onAcquire(e)
			if explode.Load() {
				panic("hook exploded")
			}
		}
		p := mustNew(t, cfg)
		acquireWithin(t, p).Release()
		explode.Store(true)
		require.PanicsWithValue(t, "hook exploded", func() { p.TryAcquire() })
		requireWhole(t, p)
		explode.Store(false)
		require.ErrorIs(t, p.With(t.Context(), func(*conn) error { return ErrBroken }), ErrBroken)
		requireWhole(t, p)
		require.NoError(t, p.Close(t.Context()))
		// Close does not wait for New's goroutine to tell OnCreate (see
		// Close): without this wait the record missed it now and then.
		synctest.Wait()
		require.ElementsMatch(t, []string{ // OnCreate in any order: New's goroutine tells it
			"create 0s ok", "acquire waited=true wait=0s ok", "release",
			"acquire waited=false wait=0s ok", "release", // the panic's, then its release
			"acquire waited=false wait=0s ok", "close destroy",
		}, rec.take())
		s := p.Stats()
		require.Equal(t, int64(3), s.AcquireCount)
		l.check(t)
	})
}

// TestHooksAcquireFromHooks: hooks may acquire, release and destroy: an
// OnRelease that takes the resource just released and destroys it, an
// OnClose that acquires a new one, an OnCreate that acquires and releases.
func TestHooksAcquireFromHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(1)
		var p *Pool[*conn]
		var depth atomic.Int32
		reenter := func(f func()) {
			if depth.Add(1) == 1 {
				f()
			}
			depth.Add(-1)
		}
		var created atomic.Int32
		cfg.Hooks = Hooks{
			OnRelease: func() {
				reenter(func() { acquireWithin(t, p).Destroy() })
			},
			OnClose: func(r CloseReason) {
				if r == ClosedDestroy {
					reenter(func() { acquireWithin(t, p).Release() })
				}
			},
			OnCreate: func(CreateEvent) {
				if created.Add(1) == 1 {
					// In the goroutine that made it, while the Acquire
					// it was made for holds it: this one waits for its
					// Release.
					go func() { acquireWithin(t, p).Release() }()
				}
			},
		}
		p = mustNew(t, cfg)
		acquireWithin(t, p).Release()
		synctest.Wait()
		requireWhole(t, p)
		s := p.Stats()
		require.Positive(t, s.ClosedDestroy, "%+v", s)
		require.NoError(t, p.Close(t.Context()))
		s = p.Stats()
		require.Equal(t, s.Created, s.ClosedDestroy+s.ClosedPool, "%+v", s)
		l.check(t)
	})
}

// TestCloseDoneCtxWhileSweepRunsUserCode: a Close with a done ctx, called
// while the sweep runs a HealthCheck, or from that very check, returns
// ctx.Err() at once rather than wait for the check; once the check has
// ended, a Close with a done ctx returns nil: nothing is left.
func TestCloseDoneCtxWhileSweepRunsUserCode(t *testing.T) {
	for _, from := range []string{"outside", "check"} {
		t.Run(from, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var rec recorder
				var p *Pool[int]
				checking, release := make(chan struct{}), make(chan struct{})
				inCheck := make(chan error, 1)
				var once atomic.Bool
				p = mustNew(t, Config[int]{
					MaxSize: 1, HealthCheckPeriod: time.Minute,
					New: func(context.Context) (int, error) { return 1, nil },
					HealthCheck: func(context.Context, int) error {
						if once.Swap(true) {
							return nil
						}
						if from == "check" {
							inCheck <- p.Close(testutil.Cancelled())
						}
						close(checking)
						<-release // ignores its ctx
						return errors.New("gone bad")
					},
					Hooks: rec.hooks(),
				})
				acquireWithin(t, p).Release()
				time.Sleep(time.Minute)
				<-checking
				if from == "check" {
					require.Equal(t, context.Canceled, <-inCheck)
				} else {
					require.Equal(t, context.Canceled, p.Close(testutil.Cancelled()))
				}
				close(release)
				synctest.Wait()
				require.NoError(t, p.Close(testutil.Cancelled()))
				requireWhole(t, p)
				// OnCreate is told by New's goroutine, in any order
				// against the caller's events.
				require.ElementsMatch(t, []string{
					"create 0s ok", "acquire waited=true wait=0s ok", "release",
					"close health", "check failed: gone bad",
				}, rec.take())
			})
		})
	}
}

// TestCreateAfterCloseToldOnceClosed: a resource made after Close is closed
// by the goroutine that made it, which then tells OnCreate, after OnClose:
// once the resource's place is free, so that a Close its hook calls, with a
// ctx that never ends, returns.
func TestCreateAfterCloseToldOnceClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		var p *Pool[int]
		made := make(chan struct{})
		closed := make(chan error, 1)
		p = mustNew(t, Config[int]{MaxSize: 1,
			New: func(context.Context) (int, error) {
				<-made // ignores its ctx
				return 1, nil
			},
			Hooks: Hooks{
				OnCreate: func(e CreateEvent) {
					rec.add("create %s", errString(e.Err))
					closed <- p.Close(context.Background())
				},
				OnClose: func(r CloseReason) { rec.add("close %v", r) },
			},
		})
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := p.Acquire(ctx)
			require.Equal(t, context.Canceled, err)
		})
		synctest.Wait()
		cancel()
		wg.Wait()
		require.Equal(t, context.Canceled, p.Close(testutil.Cancelled()))
		close(made)
		require.NoError(t, <-closed)
		require.Equal(t, []string{"close pool", "create ok"}, rec.take())
		requireWhole(t, p)
	})
}
