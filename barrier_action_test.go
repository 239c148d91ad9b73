package ctxsync_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

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
