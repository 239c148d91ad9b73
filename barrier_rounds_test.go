package ctxsync_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// blockingAction is a Barrier action (its run method) that, in the calls for
// which block says so, waits until gate is closed. running counts the actions
// running, and overlaps how often one started while another ran.
type blockingAction struct {
	gate     chan struct{}
	calls    atomic.Int32
	running  atomic.Int32
	overlaps atomic.Int32
	block    func(call int32) bool
}

func (a *blockingAction) run() error {
	if a.running.Add(1) > 1 {
		a.overlaps.Add(1)
	}
	defer a.running.Add(-1)
	if a.block(a.calls.Add(1)) {
		<-a.gate
	}
	return nil
}

// TestBarrierGateOvertaken pins a bug: a goroutine C that arrived while the
// action of round 1 ran waited at a gate and was let in after the action,
// when it ran again, so that goroutines arriving right after the release took
// round 2 before it and could push it into round 3. C arrives in round 2,
// first, at once. On one processor, the race it lost is lost every time.
func TestBarrierGateOvertaken(t *testing.T) {
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		var b *ctxsync.Barrier
		var c <-chan arrival
		b = ctxsync.NewBarrier(2, func() error {
			if c == nil {
				c = arriveAsync(t.Context(), b) // C comes during the action
				synctest.Wait()
				require.Equal(t, 1, b.Waiting(), "C is in round 2")
			}
			return nil
		})
		first := arriveAsync(t.Context(), b)
		synctest.Wait()
		i, err := b.Wait(t.Context()) // runs the action
		require.NoError(t, err)
		require.Equal(t, 1, i)
		// D and E come right after the release, before C has run again.
		d := arriveAsync(t.Context(), b)
		e := arriveAsync(t.Context(), b)
		synctest.Wait()
		require.Equal(t, arrival{0, nil}, <-first)
		require.Equal(t, arrival{0, nil}, <-c, "C arrived first in round 2")
		// One of D and E completed round 2, the other waits in round 3.
		var late <-chan arrival
		select {
		case got := <-d:
			require.Equal(t, arrival{1, nil}, got)
			late = e
		case got := <-e:
			require.Equal(t, arrival{1, nil}, got)
			late = d
		}
		require.True(t, pendingArrival(late))
		require.Equal(t, 1, b.Waiting())
		b.Reset()
		require.Equal(t, arrival{0, ctxsync.ErrBrokenBarrier}, <-late)
	})
}

// TestBarrierActionsOverlapAfterReset pins a bug: a Reset while the action ran
// let a new round complete and run its own action at the same time. The new
// round's action waits for the old one to return.
func TestBarrierActionsOverlapAfterReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &blockingAction{gate: make(chan struct{}), block: func(call int32) bool { return call == 1 }}
		b := ctxsync.NewBarrier(2, a.run)
		first := arriveAsync(t.Context(), b)
		synctest.Wait()
		second := arriveAsync(t.Context(), b) // its action blocks
		synctest.Wait()
		b.Reset()
		require.Equal(t, arrival{0, ctxsync.ErrBrokenBarrier}, <-first)
		require.False(t, b.Broken())

		c := arriveAsync(t.Context(), b)
		synctest.Wait()
		d := arriveAsync(t.Context(), b) // completes a round: its action must wait
		synctest.Wait()
		require.Equal(t, int32(1), a.calls.Load(), "the new round's action ran during the old one")
		require.True(t, pendingArrival(c))
		require.True(t, pendingArrival(d))
		require.Equal(t, 0, b.Waiting(), "the new round is complete")

		close(a.gate)
		require.Equal(t, arrival{0, ctxsync.ErrBrokenBarrier}, <-second, "its round was reset")
		require.Equal(t, arrival{0, nil}, <-c)
		require.Equal(t, arrival{1, nil}, <-d)
		require.Equal(t, int32(2), a.calls.Load())
		require.Zero(t, a.overlaps.Load())
		require.False(t, b.Broken())
	})
}

// TestBarrierCompleteRoundsQueue: with more goroutines than parties, rounds
// complete while an action runs; their actions run one after another, in
// order, each before its round's parties return.
func TestBarrierCompleteRoundsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &blockingAction{gate: make(chan struct{}), block: func(call int32) bool { return call == 1 }}
		b := ctxsync.NewBarrier(2, a.run)
		var rounds [3][2]<-chan arrival
		for r := range rounds {
			for p := range rounds[r] {
				rounds[r][p] = arriveAsync(t.Context(), b)
				synctest.Wait()
			}
		}
		require.Equal(t, int32(1), a.calls.Load())
		close(a.gate)
		for r := range rounds {
			for p := range rounds[r] {
				require.Equal(t, arrival{p, nil}, <-rounds[r][p], "round %d party %d", r, p)
			}
		}
		require.Equal(t, int32(3), a.calls.Load())
		require.Zero(t, a.overlaps.Load())
	})
}

// TestBarrierTurnWaiterGivesUp: the last party of a round that waits for an
// earlier action leaves when its ctx ends; nobody would run its round's
// action, so the barrier breaks from that round on. The earlier round, whose
// action runs, ends as its action says.
func TestBarrierTurnWaiterGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &blockingAction{gate: make(chan struct{}), block: func(call int32) bool { return call == 1 }}
		b := ctxsync.NewBarrier(2, a.run)
		first := arriveAsync(t.Context(), b)
		synctest.Wait()
		second := arriveAsync(t.Context(), b)
		synctest.Wait()
		c := arriveAsync(t.Context(), b)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		d := arriveAsync(ctx, b) // completes round 2, waits for its turn
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, arrival{0, context.DeadlineExceeded}, <-d)
		require.Equal(t, arrival{0, ctxsync.ErrBrokenBarrier}, <-c)
		require.True(t, b.Broken())

		close(a.gate)
		require.Equal(t, arrival{0, nil}, <-first, "round 1 was complete before the break")
		require.Equal(t, arrival{1, nil}, <-second)
		require.Equal(t, int32(1), a.calls.Load())
	})
}

// TestBarrierLaterRoundLeaves: a party of the next round that gives up while
// the action runs breaks the barrier from its round on, not the round whose
// action runs.
func TestBarrierLaterRoundLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &blockingAction{gate: make(chan struct{}), block: func(call int32) bool { return call == 1 }}
		b := ctxsync.NewBarrier(2, a.run)
		first := arriveAsync(t.Context(), b)
		synctest.Wait()
		second := arriveAsync(t.Context(), b)
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		c := arriveAsync(ctx, b)
		synctest.Wait()
		cancel()
		require.Equal(t, arrival{0, context.Canceled}, <-c)
		require.True(t, b.Broken())
		close(a.gate)
		require.Equal(t, arrival{0, nil}, <-first)
		require.Equal(t, arrival{1, nil}, <-second)
	})
}

// TestBarrierTurnRacesCancel: the last party of a complete round, waiting for
// an earlier action, has its ctx end, and before it runs again the action
// returns and hands it the turn. It runs its round's action all the same, and
// the round ends well.
func TestBarrierTurnRacesCancel(t *testing.T) {
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		var b *ctxsync.Barrier
		var c, d <-chan arrival
		calls := 0
		b = ctxsync.NewBarrier(2, func() error {
			if calls++; calls > 1 {
				return nil
			}
			// Round 1's action, run by this test's goroutine: round 2
			// completes meanwhile, d waiting for its turn.
			c = arriveAsync(t.Context(), b)
			synctest.Wait()
			ctx, cancel := context.WithCancel(t.Context())
			d = arriveAsync(ctx, b)
			synctest.Wait()
			cancel() // d cannot run before the action has returned
			return nil
		})
		first := arriveAsync(t.Context(), b)
		synctest.Wait()
		i, err := b.Wait(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, i)
		require.Equal(t, arrival{0, nil}, <-first)
		require.Equal(t, arrival{0, nil}, <-c)
		require.Equal(t, arrival{1, nil}, <-d)
		require.Equal(t, 2, calls)
		require.False(t, b.Broken())
	})
}
