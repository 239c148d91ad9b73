package ctxsync

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestReview11_WaitGroupRaisedBeforeStaleWakeWakesNoLaterWaiter pins a wrong
// wake-up of WaitGroup.Wait. A Done brings the counter to zero with a waiter
// queued, and is slow to look at the waiters flag; meanwhile an Add raises the
// counter again, and a second Wait begins, with the counter at one for its
// whole life. It found the flag still set and the epoch not yet moved on,
// queued under the zero's epoch, and the Done, going on, woke it with the
// first: Wait returned nil although the counter was never zero after it
// began. The doc says "Wait blocks until the counter has been zero at some
// moment since Wait was called". Right: an Add that finds a zero whose
// waiters are not yet woken moves the epoch on (and wakes them) before it
// raises the counter, so that a later waiter carries a later epoch.
func TestReview11_WaitGroupRaisedBeforeStaleWakeWakesNoLaterWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg WaitGroup
		wg.Add(1)
		first := make(chan error, 1)
		go func() { first <- wg.Wait(t.Context()) }()
		synctest.Wait()

		stale := wg.state.Add(uint64(1<<64 - 1<<wgCountBits)) // a Done, up to its look at the flag
		require.Equal(t, int32(0), int32(stale>>wgCountBits))
		wg.Add(1) // the counter rises again before the Done looks
		second := make(chan error, 1)
		go func() { second <- wg.Wait(t.Context()) }()
		synctest.Wait()
		require.Empty(t, second, "the counter is 1: the second Wait waits")

		wg.wake(stale) // the Done goes on
		synctest.Wait()
		require.NoError(t, <-first, "the first Wait saw the zero")
		require.Empty(t, second, "woken by a zero that came before it began, with the counter at 1")
		wg.Done()
		require.NoError(t, <-second)
	})
}
