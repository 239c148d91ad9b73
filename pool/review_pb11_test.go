package pool

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

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
