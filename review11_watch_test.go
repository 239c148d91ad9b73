package ctxsync_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReview11_WatchWaitCancelledBeforeStoreFails pins the package's rule
// that a waiter whose ctx ended strictly before the grant fails
// (CONTRIBUTING, cancelled_grant_test.go), for Watch.Wait. The waiter has
// joined the waiters and is on its way to its select when its ctx ends and
// then a Store comes: both its ctx's Done and the Store's channel are closed
// when it selects, and select takes either at random, so in some rounds Wait
// returned the value stored after its caller had given up, with a nil
// error. The doc says "A ctx that is already done fails even when a newer
// version is there". Right: a Wait woken by a Store looks at its ctx's Done
// once more and fails if it has ended (nothing is consumed, so failing then
// takes nothing from anyone).
func TestReview11_WatchWaitCancelledBeforeStoreFails(t *testing.T) {
	got := 0
	rounds := testutil.HammerRounds(3000)
	for round := range rounds {
		w := ctxsync.NewWatch(0)
		ctx, cancel := context.WithCancel(context.Background())
		gone := watchGo(ctx, w, 1)
		for ctxsync.WatchWaiting(w) < 1 {
			if round%2 == 0 {
				runtime.Gosched()
			}
		}
		cancel()
		w.Store(1)
		if r := <-gone; r.err == nil {
			got++
		} else {
			require.Equal(t, watchGot[int]{0, 0, context.Canceled}, r)
		}
	}
	require.Zero(t, got, "of %d Waits whose ctx ended before the Store, %d returned its value", rounds, got)
}
