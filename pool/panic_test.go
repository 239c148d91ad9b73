package pool

import (
	"context"
	"errors"
	"math/rand/v2"
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

// requireWhole checks that p holds nothing but idle resources: no slot is
// kept by a user function that panicked.
func requireWhole[T any](t *testing.T, p *Pool[T]) {
	t.Helper()
	s := p.Stats()
	require.Zero(t, s.InUse, "%+v", s)
	require.Zero(t, s.Constructing, "%+v", s)
	require.Zero(t, s.Closing, "%+v", s)
	require.Equal(t, s.Idle, s.Total, "%+v", s)
}

// acquireWithin acquires a resource of p, failing the test if that takes an
// hour of the bubble's time: a leaked slot would make it wait for good.
func acquireWithin[T any](t *testing.T, p *Pool[T]) *Resource[T] {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	r, err := p.Acquire(ctx)
	require.NoError(t, err, "the pool lost a slot: %+v", p.Stats())
	return r
}

// TestHealthCheckPanicLeaksSlot: a HealthCheck that panics at Acquire reaches
// the caller, and the resource it was checking is closed, its slot freed.
func TestHealthCheckPanicLeaksSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(1)
		var panicked atomic.Bool
		cfg.HealthCheck = func(context.Context, *conn) error {
			if !panicked.Swap(true) {
				panic("check exploded")
			}
			return nil
		}
		p := mustNew(t, cfg)
		acquireWithin(t, p).Release()
		time.Sleep(time.Second) // idle long enough to be checked
		require.PanicsWithValue(t, "check exploded", func() { _, _ = p.Acquire(t.Context()) })
		requireWhole(t, p)
		require.Equal(t, int64(1), p.Stats().ClosedHealth)
		acquireWithin(t, p).Release()
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// TestClosePanicLeaksSlot: a Config.Close that panics during Destroy or
// Release reaches the caller, and the slot frees all the same.
func TestClosePanicLeaksSlot(t *testing.T) {
	for _, how := range []string{"Destroy", "Release after MaxLifetime"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLedger()
				cfg := l.config(1)
				cfg.MaxLifetime, cfg.MaxLifetimeJitter = time.Minute, NoLifetimeJitter
				var calm atomic.Bool
				cfg.Close = func(c *conn) error {
					_ = l.close(c)
					if !calm.Load() {
						panic("close exploded")
					}
					return nil
				}
				p := mustNew(t, cfg)
				r := acquireWithin(t, p)
				end := r.Destroy
				if how != "Destroy" {
					time.Sleep(time.Minute)
					end = r.Release
				}
				require.PanicsWithValue(t, "close exploded", end)
				requireWhole(t, p)
				require.Equal(t, int64(1), p.Stats().CloseErrors, "a panic is a failed Close")
				calm.Store(true)
				acquireWithin(t, p).Release()
				require.NoError(t, p.Close(t.Context()))
				l.check(t)
			})
		})
	}
}

// TestClosePanicInPoolClose: Close closes every idle resource even when
// Config.Close panics on one; the panic reaches Close's caller, and a second
// Close finds nothing left.
func TestClosePanicInPoolClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(3)
		var calls atomic.Int32
		cfg.Close = func(c *conn) error {
			_ = l.close(c)
			if calls.Add(1) == 1 {
				panic("close exploded")
			}
			return nil
		}
		p := mustNew(t, cfg)
		releaseAll(acquireN(t, p, 3))
		require.PanicsWithValue(t, "close exploded", func() { _ = p.Close(t.Context()) })
		require.Equal(t, int32(3), calls.Load(), "the others were left open")
		s := p.Stats()
		require.Zero(t, s.Total, "%+v", s)
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// TestNewPanicReachesAcquire: a panic in Config.New, which runs in a goroutine
// of its own, reaches the Acquire that waited for it, and its slot frees.
func TestNewPanicReachesAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(1)
		var panicked atomic.Bool
		cfg.New = func(ctx context.Context) (*conn, error) {
			if !panicked.Swap(true) {
				panic(errBoom)
			}
			return l.new(ctx)
		}
		p := mustNew(t, cfg)
		v := func() (v any) {
			defer func() { v = recover() }()
			_, _ = p.Acquire(t.Context())
			return nil
		}()
		err, ok := v.(error)
		require.True(t, ok, "Acquire panicked with %v, want an error", v)
		require.ErrorIs(t, err, errBoom)
		require.Contains(t, err.Error(), "pool: Config.New panicked: boom")
		require.Contains(t, err.Error(), "TestNewPanicReachesAcquire", "New's stack")
		requireWhole(t, p)
		require.Equal(t, int64(1), p.Stats().CreateFailures)
		acquireWithin(t, p).Release()
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

var errBoom = errors.New("boom")

// TestSweepPanicLeaksSlot: a HealthCheck or Config.Close that panics in the
// background sweep leaves the pool whole before the panic goes on (in the
// pool's goroutine it would end the program, as any goroutine's panic does;
// the test runs the sweep in its own goroutine to see the state it leaves).
func TestSweepPanicLeaksSlot(t *testing.T) {
	for _, what := range []string{"HealthCheck", "Close"} {
		t.Run(what, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLedger()
				cfg := l.config(3)
				cfg.HealthCheckPeriod = 1000 * time.Hour // the test sweeps
				cfg.HealthCheck = func(context.Context, *conn) error {
					if what == "HealthCheck" {
						panic("check exploded")
					}
					return nil
				}
				cfg.MaxIdleTime = 10 * time.Minute
				cfg.Close = func(c *conn) error {
					_ = l.close(c)
					if what == "Close" {
						panic("close exploded")
					}
					return nil
				}
				p := mustNew(t, cfg)
				synctest.Wait()
				releaseAll(acquireN(t, p, 3))
				if what == "Close" {
					time.Sleep(10 * time.Minute) // all three have idled too long
				} else {
					time.Sleep(time.Minute) // all three are to be checked
				}
				require.Panics(t, func() { p.sweep(context.Background()) })
				requireWhole(t, p)
				s := p.Stats()
				if what == "Close" {
					require.Zero(t, s.Total, "%+v", s)
				} else {
					require.Equal(t, int64(1), s.ClosedHealth, "%+v", s)
					require.Equal(t, 2, s.Idle, "the checks not run yet go back: %+v", s)
				}
				require.NotPanics(t, func() { _ = p.Close(t.Context()) })
				l.check(t)
			})
		})
	}
}

// TestWithFnPanicThenClosePanics: fn panics, and so does the Config.Close of
// the resource With destroys for it: a panic reaches the caller, the slot
// frees.
func TestWithFnPanicThenClosePanics(t *testing.T) {
	l := newLedger()
	cfg := l.config(1)
	cfg.Close = func(c *conn) error { _ = l.close(c); panic("close exploded") }
	p := mustNew(t, cfg)
	require.Panics(t, func() { _ = p.With(context.Background(), func(*conn) error { panic("fn exploded") }) })
	requireWhole(t, p)
	require.NoError(t, p.Close(context.Background()))
	l.check(t)
}

// TestNewPanicToAbandonedAcquire: a panic of New handed to an Acquire as its
// ctx ends is raised by that Acquire, not dropped with its wait. The
// interleaving is made by hand: the test plays the waiting Acquire and runs
// the call to New itself.
func TestNewPanicToAbandonedAcquire(t *testing.T) {
	cfg := Config[int]{MaxSize: 1, New: func(context.Context) (int, error) { panic(errBoom) }}
	p := mustNew(t, cfg)
	p.q.Lock()
	w := p.q.Push(handoff[int]{}) // an Acquire waits for New
	p.making++
	p.q.Unlock()
	_, ok := p.q.Wait(testutil.Cancelled().Done(), w) // and its ctx ends,
	require.False(t, ok)
	p.make(context.Background()) // as New panics.
	np := p.abandon(w)           // for the Acquire to raise
	require.ErrorIs(t, np, errBoom, "the panic was dropped: %v", np)
	requireWhole(t, p)
	require.NoError(t, p.Close(context.Background()))
}

// TestBackgroundPanicEndsProgram: a panic of New in the pool's own goroutine,
// making a resource for MinIdle that no caller waits for, is not swallowed:
// it ends the program, as any goroutine's panic does (see Pool). The test
// runs itself in a child process to see it.
func TestBackgroundPanicEndsProgram(t *testing.T) {
	if os.Getenv("POOL_TEST_BACKGROUND_PANIC") == "1" {
		synctest.Test(t, func(t *testing.T) {
			p := mustNew(t, Config[int]{MaxSize: 1, MinIdle: 1,
				New: func(context.Context) (int, error) { panic("refill exploded") }})
			time.Sleep(time.Hour)
			_ = p.Close(t.Context())
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBackgroundPanicEndsProgram$", "-test.count=1")
	cmd.Env = append(os.Environ(), "POOL_TEST_BACKGROUND_PANIC=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the program went on: %s", out)
	require.Contains(t, string(out), "panic: refill exploded")
}

// TestHammerPoolPanics: goroutines acquire with random timeouts, use
// resources through With, release and destroy them, while HealthCheck,
// Config.Close, Config.Broken, fn and the hooks panic at random (New fails at random: a
// panic of New whose Acquire has given up would end the program, see Pool).
// Each panic reaches the goroutine that ran the function; at the end nothing
// is held, the pool never had more than MaxSize alive, and every resource was
// closed once.
func TestHammerPoolPanics(t *testing.T) {
	var panics atomic.Int32
	defer func() { require.Positive(t, panics.Load(), "nothing panicked: the test tests nothing") }()
	for seed := range uint64(testutil.HammerRounds(10)) {
		synctest.Test(t, func(t *testing.T) {
			l := newLedger()
			const maxSize = 3
			cfg := l.config(maxSize)
			var rmu sync.Mutex
			r0 := rand.New(rand.NewPCG(seed, 11))
			chance := func(n int) bool {
				rmu.Lock()
				defer rmu.Unlock()
				return r0.IntN(n) == 0
			}
			var calm atomic.Bool // no more panics: the end is near
			inner := cfg.New
			cfg.New = func(ctx context.Context) (*conn, error) {
				time.Sleep(time.Millisecond)
				if chance(6) {
					return nil, errors.New("flaky")
				}
				return inner(ctx)
			}
			cfg.HealthCheckSkip = -1
			cfg.HealthCheckPeriod = 1000 * time.Hour // checks at Acquire only
			cfg.HealthCheck = func(context.Context, *conn) error {
				if !calm.Load() && chance(8) {
					panic("check exploded")
				}
				return nil
			}
			cfg.MaxLifetime = 5 * time.Millisecond
			cfg.Close = func(c *conn) error {
				_ = l.close(c)
				if !calm.Load() && chance(8) {
					panic("close exploded")
				}
				return nil
			}
			cfg.Broken = func(*conn, error) bool {
				if chance(10) {
					panic("broken exploded")
				}
				return chance(5)
			}
			// Hooks panic too, where they run in the caller's goroutine:
			// OnClose for reasons the pool's own goroutine never closes
			// for here (its sweep is hours away; it closes for ClosedPool
			// a resource made after Close).
			hookBoom := func() {
				if !calm.Load() && chance(12) {
					panic("hook exploded")
				}
			}
			cfg.Hooks = Hooks{
				OnAcquire: func(AcquireEvent) { hookBoom() },
				OnRelease: hookBoom,
				OnClose: func(r CloseReason) {
					if r != ClosedPool {
						hookBoom()
					}
				},
				OnHealthCheckFail: func(error) { hookBoom() },
			}
			p := mustNew(t, cfg)
			var wg sync.WaitGroup
			for g := range 6 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(g)))
					for range 30 {
						func() {
							defer func() {
								if recover() != nil {
									panics.Add(1)
								}
							}()
							if r.IntN(2) == 0 {
								churn(t, p, r, 4, 4)
								return
							}
							ctx, cancel := context.WithTimeout(t.Context(), time.Duration(r.IntN(4))*time.Millisecond)
							defer cancel()
							_ = p.With(ctx, func(*conn) error {
								time.Sleep(time.Duration(r.IntN(2)) * time.Millisecond)
								if r.IntN(10) == 0 {
									panic("fn exploded")
								}
								return nil
							})
						}()
					}
				})
			}
			wg.Wait()
			calm.Store(true)
			synctest.Wait() // calls to New for Acquires that gave up end
			require.NoError(t, p.Close(t.Context()))
			l.check(t)
			s := p.Stats()
			require.Zero(t, s.Total, "%+v", s)
			require.LessOrEqual(t, l.maxLive, maxSize, "more than MaxSize alive")
		})
	}
}

// TestClosePanicAtCheckout: Acquire and TryAcquire close an idle resource
// found past MaxLifetime; a Config.Close that panics there reaches their
// caller, and the slot frees.
func TestClosePanicAtCheckout(t *testing.T) {
	for _, how := range []string{"Acquire", "TryAcquire"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLedger()
				cfg := l.config(1)
				cfg.MaxLifetime, cfg.MaxLifetimeJitter = time.Minute, NoLifetimeJitter
				cfg.HealthCheckPeriod = 1000 * time.Hour // no sweep
				var calm atomic.Bool
				cfg.Close = func(c *conn) error {
					_ = l.close(c)
					if !calm.Load() {
						panic("close exploded")
					}
					return nil
				}
				p := mustNew(t, cfg)
				acquireWithin(t, p).Release()
				time.Sleep(time.Minute)
				require.PanicsWithValue(t, "close exploded", func() {
					if how == "Acquire" {
						_, _ = p.Acquire(t.Context())
					} else {
						_, _ = p.TryAcquire()
					}
				})
				requireWhole(t, p)
				s := p.Stats()
				require.Zero(t, s.Total, "%+v", s)
				require.Equal(t, int64(1), s.AcquireCount, "the failed checkout counted: %+v", s)
				calm.Store(true)
				acquireWithin(t, p).Release()
				require.NoError(t, p.Close(t.Context()))
				l.check(t)
			})
		})
	}
}
