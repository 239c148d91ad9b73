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
// DEFECT (since 91cdaa6): r1 takes d out of the count before it serves
// anyone: with r2's permit on its way, d's leaving frees a permit, and r1
// then drops its own as the one d's leaving replaced. So r1 returns without
// serving l, the oldest waiter, which now waits until r2's goroutine runs
// again and makes its hand-off (on a loaded machine, as long as it takes to
// be scheduled), while the permit lies free for a newcomer's TryAcquire.
// Before 91cdaa6, r1 granted l. The Semaphore's doc: "Release hands its
// permit straight to the oldest waiter". The right behaviour: r1 grants l,
// then settles d; what d's leaving frees goes free once l is served.
//
// (Without d, r1's Add finds every counted goroutine promised a permit and
// frees its own, l waiting for r2's hand-off all the same: the lock-free
// Release allows that window by design. d's leaving must not widen it to a
// Release that finds a waiter to serve.)
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

		require.Zero(t, s.Waiting(), "l, the oldest waiter, is served by r1, not left for r2's hand-off")
		synctest.Wait()
		require.Equal(t, context.Canceled, <-d)
		require.NotEmpty(t, l, "l, served by r1, returns before r2's hand-off")
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
