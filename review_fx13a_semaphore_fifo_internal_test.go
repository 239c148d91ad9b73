package ctxsync

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestSemaphoreReleasePastGoneWaiterServesNextFirst: waiters d and l are
// queued, in that order; a Release's Add lands (r2: its permit is promised
// to the goroutines counted, its hand-off yet to come); d's ctx ends, and
// before d runs again another Release (r1) passes over it.
//
// DEFECT (91cdaa6): r1 takes d out of the count before it serves anyone:
// with r2's permit on its way, d's leaving frees a permit, and r1 then
// drops its own as the one d's leaving replaced. It returns with a permit
// free (Available 1) while l, the oldest waiter, is still queued without
// one, waiting for r2's hand-off; a newcomer's TryAcquire takes that permit
// ahead of l. The Semaphore's doc: "Release hands its permit straight to
// the oldest waiter, and neither Acquire nor TryAcquire takes a permit
// while a queued goroutine is still without one". Before 91cdaa6, r1
// granted l. The right behaviour: r1 grants l, then settles d; the permit
// that d's leaving frees is free only once nobody waits.
func TestSemaphoreReleasePastGoneWaiterServesNextFirst(t *testing.T) {
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		s := NewSemaphore(0)
		start := func(ctx context.Context) chan error {
			res := make(chan error, 1)
			go func() { res <- s.Acquire(ctx) }()
			synctest.Wait()
			return res
		}
		ctxD, cancelD := context.WithCancel(t.Context())
		d := start(ctxD)
		l := start(t.Context())
		require.Equal(t, 2, s.Waiting())

		c2 := s.state.Add(1) // r2's Add
		require.LessOrEqual(t, c2, int64(0))
		cancelD()   // d does not run before the checks below
		s.Release() // r1, past d

		if s.Waiting() > 0 {
			require.Zero(t, s.Available(), "a permit free while l waits without one")
			require.False(t, s.TryAcquire(), "a newcomer's TryAcquire overtakes l, queued")
		}
		synctest.Wait()
		require.Equal(t, context.Canceled, <-d)
		require.NotEmpty(t, l, "l, the oldest waiter, is served by r1, before r2's hand-off")
		require.NoError(t, <-l)

		s.handOff(c2)
		require.Equal(t, 1, s.Available(), "two Releases, l holds one")
		require.Zero(t, s.Waiting())
		s.Release()
		require.Equal(t, 2, s.Available())
		s.q.Lock()
		require.Zero(t, s.owed)
		s.q.Unlock()
	})
}
