package ctxsync_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"runtime/debug"
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

// TestBarrierActionFailsLaterRounds: an action that fails breaks its round and
// the complete rounds waiting to run theirs, whose actions never run.
func TestBarrierActionFailsLaterRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var calls atomic.Int32
		b := ctxsync.NewBarrier(2, func() error {
			if calls.Add(1) == 1 {
				<-gate
				return errAction
			}
			return nil
		})
		var chans []<-chan arrival
		for range 4 {
			chans = append(chans, arriveAsync(t.Context(), b))
			synctest.Wait()
		}
		close(gate)
		want := []arrival{{0, ctxsync.ErrBrokenBarrier}, {0, errAction}, {0, ctxsync.ErrBrokenBarrier}, {0, ctxsync.ErrBrokenBarrier}}
		for i, ch := range chans {
			require.Equal(t, want[i], <-ch, "party %d", i)
		}
		require.Equal(t, int32(1), calls.Load())
		require.True(t, b.Broken())
	})
}

// TestBarrierActionGoexit: an action that calls runtime.Goexit (t.FailNow in
// a test, say) breaks the barrier instead of leaving it running forever.
func TestBarrierActionGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(2, func() error { runtime.Goexit(); return nil })
		first := arriveAsync(t.Context(), b)
		synctest.Wait()
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			_, _ = b.Wait(t.Context())
		}()
		<-exited
		require.Equal(t, arrival{0, ctxsync.ErrBrokenBarrier}, <-first)
		require.True(t, b.Broken())
		b.Reset()
		_, err := ctxsync.NewBarrier(1, nil).Wait(t.Context())
		require.NoError(t, err)
	})
}

func panickingBarrierAction() error { panic("kaboom") }

// TestBarrierActionPanicStack: the panic of the action goes on from where it
// happened, not from a re-panic inside the barrier, so that its stack shows
// the action.
func TestBarrierActionPanicStack(t *testing.T) {
	b := ctxsync.NewBarrier(1, panickingBarrierAction)
	var stack string
	func() {
		defer func() {
			require.Equal(t, "kaboom", recover())
			stack = string(debug.Stack())
		}()
		_, _ = b.Wait(context.Background())
	}()
	require.Contains(t, stack, "panickingBarrierAction")
	require.True(t, b.Broken())
	b.Reset()
	require.False(t, b.Broken())
}

// TestBarrierActionCallsBack: the action may call every method but Wait
// without deadlock, and Reset and Abort from it end its round.
func TestBarrierActionCallsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b *ctxsync.Barrier
		var seen []int
		var then func()
		b = ctxsync.NewBarrier(2, func() error {
			seen = append(seen, b.Parties(), b.Waiting())
			require.False(t, b.Broken())
			if then != nil {
				then()
			}
			return nil
		})
		first := arriveAsync(t.Context(), b)
		synctest.Wait()
		i, err := b.Wait(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, i)
		require.Equal(t, arrival{0, nil}, <-first)
		require.Equal(t, []int{2, 0}, seen)

		then = b.Abort
		first = arriveAsync(t.Context(), b)
		synctest.Wait()
		_, err = b.Wait(t.Context())
		require.Equal(t, ctxsync.ErrBrokenBarrier, err)
		require.Equal(t, arrival{0, ctxsync.ErrBrokenBarrier}, <-first)
		require.True(t, b.Broken())

		b.Reset()
		then = b.Reset
		first = arriveAsync(t.Context(), b)
		synctest.Wait()
		_, err = b.Wait(t.Context())
		require.Equal(t, ctxsync.ErrBrokenBarrier, err)
		require.Equal(t, arrival{0, ctxsync.ErrBrokenBarrier}, <-first)
		require.False(t, b.Broken())
	})
}

// TestBarrierActionCallsWait: a Wait from the action cannot succeed (its
// round ends only after the action that waits). It does not hang past its
// ctx, and the round whose action called it ends well.
func TestBarrierActionCallsWait(t *testing.T) {
	for _, parties := range []int{1, 2} {
		synctest.Test(t, func(t *testing.T) {
			var b *ctxsync.Barrier
			var inner error
			calls := 0
			b = ctxsync.NewBarrier(parties, func() error {
				if calls++; calls == 1 {
					ctx, cancel := context.WithTimeout(t.Context(), time.Second)
					defer cancel()
					_, inner = b.Wait(ctx)
				}
				return nil
			})
			var others []<-chan arrival
			for range parties - 1 {
				others = append(others, arriveAsync(t.Context(), b))
				synctest.Wait()
			}
			i, err := b.Wait(t.Context())
			require.NoError(t, err)
			require.Equal(t, parties-1, i)
			require.Equal(t, context.DeadlineExceeded, inner)
			for p, ch := range others {
				require.Equal(t, arrival{p, nil}, <-ch)
			}
			require.True(t, b.Broken(), "the inner Wait gave up")
			require.Equal(t, 1, calls)
		})
	}
}

func TestBarrierExtremeParties(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ctxsync.NewBarrier(math.MaxInt, nil)
		require.Equal(t, math.MaxInt, b.Parties())
		chans := []<-chan arrival{arriveAsync(t.Context(), b), arriveAsync(t.Context(), b)}
		synctest.Wait()
		require.Equal(t, 2, b.Waiting())
		b.Abort()
		for _, ch := range chans {
			require.Equal(t, ctxsync.ErrBrokenBarrier, (<-ch).err)
		}
	})
	for _, n := range []int{0, -1, math.MinInt} {
		require.PanicsWithValue(t, "ctxsync: NewBarrier with fewer than 1 party", func() { ctxsync.NewBarrier(n, nil) })
	}
}

// TestBarrierZeroValue: Wait on the zero Barrier panics, saying what to use;
// the other methods answer and change nothing that matters.
func TestBarrierZeroValue(t *testing.T) {
	var b ctxsync.Barrier
	require.PanicsWithValue(t, "ctxsync: Barrier.Wait on a zero Barrier; use NewBarrier", func() { _, _ = b.Wait(context.Background()) })
	require.Equal(t, 0, b.Parties())
	require.Equal(t, 0, b.Waiting())
	require.False(t, b.Broken())
	b.Abort()
	require.True(t, b.Broken())
	b.Reset()
	require.False(t, b.Broken())
}

// TestBarrierAcrossBubbles: a Barrier made outside a synctest bubble serves
// rounds inside one, and one made inside keeps serving after it ends.
func TestBarrierAcrossBubbles(t *testing.T) {
	round := func(t *testing.T, b *ctxsync.Barrier) {
		done := make(chan arrival, b.Parties())
		for range b.Parties() {
			go func() {
				i, err := b.Wait(context.Background())
				done <- arrival{i, err}
			}()
		}
		var got []int
		for range b.Parties() {
			a := <-done
			require.NoError(t, a.err)
			got = append(got, a.index)
		}
		require.ElementsMatch(t, []int{0, 1, 2}, got)
	}
	outside := ctxsync.NewBarrier(3, func() error { return nil })
	round(t, outside)
	var inside *ctxsync.Barrier
	synctest.Test(t, func(t *testing.T) {
		round(t, outside)
		inside = ctxsync.NewBarrier(3, func() error { return nil })
		round(t, inside)
		// Left broken with waiters released: nothing of the bubble is kept.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := inside.Wait(ctx)
		require.Equal(t, context.DeadlineExceeded, err)
	})
	require.True(t, inside.Broken())
	inside.Reset()
	round(t, inside)
	round(t, outside)
}

// TestBarrierReleaseRacesCancel: parties whose ctx ends as the round ends,
// by its last arrival or by Reset, get the round's outcome or their ctx's
// error, never anything else, and the barrier is whole afterwards.
func TestBarrierReleaseRacesCancel(t *testing.T) {
	for i := range 300 {
		b := ctxsync.NewBarrier(3, nil)
		ctx, cancel := context.WithCancel(context.Background())
		a := arriveAsync(ctx, b)
		c := arriveAsync(context.Background(), b)
		for b.Waiting() < 2 {
			runtime.Gosched()
		}
		go cancel()
		var last error
		if i%2 == 0 {
			_, last = b.Wait(context.Background())
		} else {
			b.Reset()
		}
		ra, rc := <-a, <-c
		switch {
		case i%2 == 1:
			require.True(t, ra.err == ctxsync.ErrBrokenBarrier || ra.err == context.Canceled, "%v", ra.err)
			require.Equal(t, ctxsync.ErrBrokenBarrier, rc.err)
		case ra.err == nil:
			require.NoError(t, last)
			require.NoError(t, rc.err)
		default:
			// A left: before the round was complete, which broke it, or
			// after, which left it whole.
			require.True(t, errors.Is(ra.err, context.Canceled), "%v", ra.err)
			if last == nil {
				require.NoError(t, rc.err)
			} else {
				require.Equal(t, ctxsync.ErrBrokenBarrier, last)
				require.Equal(t, ctxsync.ErrBrokenBarrier, rc.err)
			}
		}
		cancel()
		b.Reset()
		require.Equal(t, 0, b.Waiting())
		require.False(t, b.Broken())
	}
}

// TestBarrierResetRacesCancel: a party's ctx ends, and before it runs again a
// Reset releases it. It reports one or the other, and the barrier is whole.
func TestBarrierResetRacesCancel(t *testing.T) {
	b := ctxsync.NewBarrier(3, nil)
	errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
		wait := func(ctx context.Context) error { _, err := b.Wait(ctx); return err }
		return grantRace{first: wait, second: wait, grant: b.Reset}
	})
	require.Contains(t, []error{ctxsync.ErrBrokenBarrier, context.Canceled}, errA)
	require.Equal(t, ctxsync.ErrBrokenBarrier, errB)
	require.False(t, b.Broken())
	require.Equal(t, 0, b.Waiting())
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
