package ctxsync

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestEventHoldersSettle: however Waits end (woken by Set, or giving up, as
// Set and Clear race them), once none is under way the holders' count is
// zero. A count left above zero would keep a channel that nobody holds, which
// may belong to a synctest bubble that has ended, and make Set close it.
func TestEventHoldersSettle(t *testing.T) {
	var e Event
	var wg sync.WaitGroup
	rounds := testutil.HammerRounds(300)
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 11))
			for range rounds {
				switch r.IntN(8) {
				case 0:
					e.Set()
				case 1:
					e.Clear()
				case 2:
					_ = e.Done()
				default:
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(100))*time.Microsecond)
					if err := e.Wait(ctx); err != nil && err != ctx.Err() {
						t.Errorf("Wait = %v", err)
					}
					cancel()
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, e.holders.Load()&holderCount, "holders counted with no Wait under way")

}

// TestEventUnheldChannelDropped: an unset Event whose waiters all gave up
// drops their channel, and the next waiter makes its own; the waiters Set
// wakes are no longer counted.
func TestEventUnheldChannelDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e Event
		ctx, cancel := context.WithCancel(t.Context())
		left := make(chan error)
		go func() { left <- e.Wait(ctx) }()
		synctest.Wait()
		require.Equal(t, uint64(1), e.holders.Load()&holderCount)
		first := e.loadCh()
		cancel()
		require.ErrorIs(t, <-left, context.Canceled)
		require.Zero(t, e.holders.Load()&holderCount)

		woke := make(chan error)
		for range 2 {
			go func() { woke <- e.Wait(t.Context()) }()
		}
		synctest.Wait()
		require.Equal(t, uint64(2), e.holders.Load()&holderCount)
		require.NotEqual(t, first, e.loadCh(), "a channel that nobody held was kept")
		e.Set()
		require.NoError(t, <-woke)
		require.NoError(t, <-woke)
		require.Zero(t, e.holders.Load()&holderCount, "those Set woke are still counted")
	})
}

// TestEventReplacedChannelMovesGeneration: once the channel has been
// replaced, the holders' word differs from what a joiner loaded with the old
// one, so that the joiner's compare-and-swap fails. Were it to succeed, the
// joiner would wait on a channel that no Set closes.
func TestEventReplacedChannelMovesGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e Event
		ctx, cancel := context.WithCancel(t.Context())
		go func() { _ = e.Wait(ctx) }()
		synctest.Wait()
		h, old := e.holders.Load(), e.loadCh() // what a joiner loads, before its compare-and-swap
		cancel()                               // the only holder leaves,
		synctest.Wait()
		go func() { _ = e.Wait(t.Context()) }() // and the next one replaces the channel
		synctest.Wait()
		require.NotEqual(t, old, e.loadCh())
		require.Equal(t, h&holderCount, e.holders.Load()&holderCount, "one holder then, one now")
		require.False(t, e.holders.CompareAndSwap(h, h+1), "a joiner holding the old channel counted itself in")
		e.Set()
		synctest.Wait()
	})
}
