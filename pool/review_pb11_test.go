package pool

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regression: a Resource given back by its holder with Destroy, or with a
// Release that closed it past MaxLifetime, had its state set to closed, the
// state that the pool's Close gives the resources it closes; and Release and
// Destroy take a closed resource silently, for Close's sake ("after Close has
// closed r, Release does nothing"). So a second Release or Destroy by the
// same holder did nothing, where Resource's doc promises a panic for a
// resource "released already": the bug (a double give-back, a Release
// deferred beside a Destroy) went unseen. Right: only a resource closed for
// the pool's Close is given back silently; one its holder destroyed, or
// released past its lifetime, panics at a second give-back, as after a
// Release that kept it.
func TestReviewPB11_GiveBackAfterCloseByHolderPanics(t *testing.T) {
	const (
		releasePanic = "pool: Release of a resource not acquired (released already?)"
		destroyPanic = "pool: Destroy of a resource not acquired (released already?)"
	)
	t.Run("Destroy", func(t *testing.T) {
		l := newLedger()
		p := mustNew(t, l.config(1))
		r, err := p.Acquire(context.Background())
		require.NoError(t, err)
		r.Destroy()
		require.PanicsWithValue(t, releasePanic, r.Release)
		require.PanicsWithValue(t, destroyPanic, r.Destroy)
		requireWhole(t, p)
		require.NoError(t, p.Close(context.Background()))
		l.check(t)
	})
	t.Run("ReleasePastLifetime", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := newLedger()
			cfg := l.config(1)
			cfg.MaxLifetime = time.Second
			cfg.MaxLifetimeJitter = NoLifetimeJitter
			p := mustNew(t, cfg)
			r, err := p.Acquire(t.Context())
			require.NoError(t, err)
			time.Sleep(2 * time.Second)
			r.Release() // closed: past its lifetime
			require.Equal(t, int64(1), p.Stats().ClosedLifetime)
			require.PanicsWithValue(t, releasePanic, r.Release)
			require.PanicsWithValue(t, destroyPanic, r.Destroy)
			require.NoError(t, p.Close(t.Context()))
			l.check(t)
		})
	})
	t.Run("ClosedForPoolStillSilent", func(t *testing.T) {
		// The cases the silence is for: Close gave up waiting and closed
		// the resource under its holder, or the holder's Release closed
		// it for the pool's Close (TestCloseConcurrently pins that a
		// later Release then does nothing).
		synctest.Test(t, func(t *testing.T) {
			l := newLedger()
			p := mustNew(t, l.config(1))
			r, err := p.Acquire(t.Context())
			require.NoError(t, err)
			closed := make(chan error)
			go func() { closed <- p.Close(t.Context()) }()
			synctest.Wait() // Close waits for r
			r.Release()     // closed: the pool is
			require.NoError(t, <-closed)
			require.NotPanics(t, r.Release)
			require.NotPanics(t, r.Destroy)
			l.check(t)
		})
	})
	t.Run("ClosedByCloseStillSilent", func(t *testing.T) {
		l := newLedger()
		p := mustNew(t, l.config(1))
		r, err := p.Acquire(context.Background())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, p.Close(ctx), context.Canceled)
		require.NotPanics(t, r.Release)
		require.NotPanics(t, r.Destroy)
		l.check(t)
	})
}

// Regression: MinIdle was topped up only when an Acquire took the idle
// resources below it (a wake-up then, useless when the pool was full) and at
// each HealthCheckPeriod. A place freed later, by a Destroy, a Release past
// MaxLifetime or a failed HealthCheck at Acquire, woke nobody: a pool of
// MaxSize 1 and MinIdle 1 whose resource was destroyed kept no resource
// ready for a whole period (a minute by default; an hour here), though
// Config.MinIdle promises idle resources "kept ready, made in the
// background". Right: a close that frees a place the pool needs for MinIdle
// wakes the background goroutine, as the Acquire did.
func TestReviewPB11_MinIdleRefilledAfterClose(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(*Config[*conn])
		giveUp func(*Resource[*conn])
	}{
		{"Destroy", nil, (*Resource[*conn]).Destroy},
		{"ReleasePastLifetime", func(c *Config[*conn]) {
			c.MaxLifetime = time.Minute
			c.MaxLifetimeJitter = NoLifetimeJitter
		}, func(r *Resource[*conn]) {
			time.Sleep(2 * time.Minute)
			r.Release()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLedger()
				cfg := l.config(1)
				cfg.MinIdle = 1
				cfg.HealthCheckPeriod = time.Hour
				if tc.setup != nil {
					tc.setup(&cfg)
				}
				p := mustNew(t, cfg)
				synctest.Wait()
				require.Equal(t, 1, p.Stats().Idle, "not topped up at start")
				r, err := p.Acquire(t.Context())
				require.NoError(t, err)
				synctest.Wait()
				tc.giveUp(r)
				synctest.Wait()
				// assert, not require: the pool must still be closed,
				// or its goroutine would outlive the bubble.
				assert.Equal(t, 1, p.Stats().Idle, "MinIdle not topped up after the place freed: %+v", p.Stats())
				require.NoError(t, p.Close(t.Context()))
				l.check(t)
			})
		})
	}
}

// Regression: the background sweep took every idle resource due for a
// HealthCheck out of the pool at once, counted as in use, then checked them
// one after the other. While the first check ran (up to HealthCheckTimeout,
// 5 seconds by default, for a backend that hangs), an Acquire found no idle
// resource and the pool full, and waited, though the others sat healthy and
// unchecked; each was handed out only once the checks before it had ended,
// and Stats showed them all in use. Right: the sweep takes out only the
// resource it is checking; the others stay idle, for an Acquire to take
// (and check itself, if due).
func TestReviewPB11_SweepLeavesUncheckedResourcesIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger()
		cfg := l.config(3)
		cfg.HealthCheckPeriod = time.Minute
		cfg.HealthCheckTimeout = time.Hour
		gate := make(chan struct{})
		var slowOnce atomic.Bool
		cfg.HealthCheck = func(ctx context.Context, c *conn) error {
			if c.id == 1 && slowOnce.CompareAndSwap(false, true) {
				<-gate // the backend hangs on this one
			}
			return nil
		}
		p := mustNew(t, cfg)
		rs := acquireN(t, p, 3)
		for _, r := range rs { // idle oldest first: conn 1 is checked first
			r.Release()
		}
		time.Sleep(time.Minute + time.Second) // the sweep runs, and hangs on conn 1
		synctest.Wait()
		s := p.Stats()
		assert.Equal(t, 2, s.Idle, "resources not under a check are idle: %+v", s)
		assert.Equal(t, 1, s.InUse, "%+v", s)

		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		r, err := p.Acquire(ctx)
		cancel()
		if assert.NoError(t, err, "Acquire waited for the sweep's check of another resource") {
			assert.NotEqual(t, 1, r.Value().id)
			r.Release()
		}
		close(gate)
		synctest.Wait()
		requireWhole(t, p)
		require.Equal(t, 3, p.Stats().Idle)
		require.NoError(t, p.Close(t.Context()))
		l.check(t)
	})
}

// Regression: Close cancels the ctx of the background HealthCheck under way,
// and a check that honours its ctx then fails with context.Canceled: the
// sweep counted that resource as closed for failing its check
// (Stats.ClosedHealth, Hooks.OnClose with ClosedHealth) and told
// Hooks.OnHealthCheckFail "context canceled", so that every Close that
// met a background check raised a false health failure on the dashboards.
// The same check at Acquire, ended with its caller's ctx, is given the
// benefit of the doubt and not told, and a resource checked at Acquire
// when Close comes is closed for ClosedPool. Right: a background check
// that failed as Close ended its ctx closes its resource for ClosedPool,
// and is not told as a failed check.
func TestReviewPB11_CloseDuringBackgroundCheckIsNoHealthFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		l := newLedger()
		cfg := l.config(1)
		cfg.HealthCheckPeriod = time.Minute
		checking := make(chan struct{})
		var block atomic.Bool
		cfg.HealthCheck = func(ctx context.Context, _ *conn) error {
			if !block.Load() {
				return nil
			}
			close(checking)
			<-ctx.Done() // a slow backend; Close cancels the check
			return ctx.Err()
		}
		cfg.Hooks = rec.hooks()
		p := mustNew(t, cfg)
		acquireWithin(t, p).Release()
		synctest.Wait()
		rec.take()
		block.Store(true)
		time.Sleep(time.Minute) // the sweep checks the resource
		<-checking
		require.NoError(t, p.Close(t.Context()))
		synctest.Wait()
		s := p.Stats()
		assert.Zero(t, s.ClosedHealth, "%+v", s)
		assert.Equal(t, int64(1), s.ClosedPool, "%+v", s)
		assert.Equal(t, []string{"close pool"}, rec.take())
		l.check(t)
	})
}

// pb11Key is a ctx value key for TestReviewPB11_NewGetsTheWaitersValues.
type pb11Key struct{}

// Regression: Config.New promises the values of the context of the Acquire
// that asked for the resource (a trace span to hang New's under, say). But
// when the Acquire waited in a full pool and a place freed later (a Destroy,
// a failed New, a close), the call to New made for it was started there with
// context.Background(): New saw none of the waiter's values. Right: the call
// to New made for a waiting Acquire gets that Acquire's values, whoever
// frees the place.
func TestReviewPB11_NewGetsTheWaitersValues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := make(chan any, 2)
		p := mustNew(t, Config[int]{
			MaxSize: 1,
			New: func(ctx context.Context) (int, error) {
				seen <- ctx.Value(pb11Key{})
				return 1, nil
			},
		})
		held, err := p.Acquire(context.WithValue(t.Context(), pb11Key{}, "holder"))
		require.NoError(t, err)
		require.Equal(t, "holder", <-seen)
		got := make(chan *Resource[int])
		go func() {
			r, err := p.Acquire(context.WithValue(t.Context(), pb11Key{}, "waiter"))
			assert.NoError(t, err)
			got <- r
		}()
		synctest.Wait() // the waiter is queued, the pool full
		held.Destroy()  // frees the place: New is called for the waiter
		(<-got).Release()
		assert.Equal(t, "waiter", <-seen, "New for a waiting Acquire lacks its ctx's values")
		require.NoError(t, p.Close(t.Context()))
	})
}

// Regression: the resource that the top-up of MinIdle made goes to the
// oldest waiting Acquire if one came meanwhile, as every new resource does;
// but then the idle resources stayed below MinIdle, with room in the pool,
// until the next HealthCheckPeriod: nothing woke the top-up again, and the
// next Acquire waited for a call to New. Right: a new resource handed to a
// waiter, leaving the idle ones below MinIdle, wakes the top-up.
func TestReviewPB11_MinIdleRefilledAfterTopUpServedAWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gate atomic.Pointer[chan struct{}]
		p := mustNew(t, Config[int]{
			MaxSize: 3, MinIdle: 1, HealthCheckPeriod: time.Hour,
			New: func(context.Context) (int, error) {
				if g := gate.Load(); g != nil {
					<-*g
				}
				return 1, nil
			},
		})
		synctest.Wait()
		require.Equal(t, 1, p.Stats().Idle, "not topped up at start")
		g := make(chan struct{})
		gate.Store(&g)
		a1, err := p.Acquire(t.Context()) // takes the idle one: the top-up starts New
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 1, p.Stats().Constructing)
		got := make(chan *Resource[int])
		go func() {
			r, err := p.Acquire(t.Context()) // served by the top-up's resource
			assert.NoError(t, err)
			got <- r
		}()
		synctest.Wait()
		gate.Store(nil)
		close(g)
		a2 := <-got
		synctest.Wait()
		assert.Equal(t, 1, p.Stats().Idle, "MinIdle not topped up again: %+v", p.Stats())
		a1.Release()
		a2.Release()
		require.NoError(t, p.Close(t.Context()))
	})
}
