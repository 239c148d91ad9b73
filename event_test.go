package ctxsync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestEventZeroValue(t *testing.T) {
	var e ctxsync.Event
	require.False(t, e.IsSet())
	require.False(t, isClosed(e.Done()))
	e.Set()
	require.True(t, e.IsSet())
	require.True(t, isClosed(e.Done()))
	require.NoError(t, e.Wait(context.Background()), "Wait on a set Event")
	e.Clear()
	require.False(t, e.IsSet())
	require.False(t, isClosed(e.Done()))
}

func TestEventSetWakesAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := ctxsync.NewEvent()
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() { assert.NoError(t, e.Wait(t.Context())) })
		}
		done := e.Done()
		synctest.Wait()
		require.False(t, isClosed(done))
		e.Set()
		wg.Wait()
		require.True(t, isClosed(done))
	})
}

// TestEventSetClearStillWakes: a waiter blocked before Set(); Clear() saw the
// flag raised, so it wakes.
func TestEventSetClearStillWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e ctxsync.Event
		woke := make(chan error)
		go func() { woke <- e.Wait(t.Context()) }()
		old := e.Done()
		synctest.Wait()
		e.Set()
		e.Clear()
		require.NoError(t, <-woke)
		require.True(t, isClosed(old), "a channel handed out before Clear reopened")
		require.False(t, isClosed(e.Done()), "Done after Clear is closed")

		// And the next run works as the first did.
		go func() { woke <- e.Wait(t.Context()) }()
		synctest.Wait()
		require.Zero(t, len(woke))
		e.Set()
		require.NoError(t, <-woke)
	})
}

func TestEventSetOnSetAllocatesNothing(t *testing.T) {
	var e ctxsync.Event
	e.Set()
	_ = e.Done()
	allocs := testing.AllocsPerRun(100, e.Set)
	require.Zero(t, allocs, "Set on a set Event allocated")
	allocs = testing.AllocsPerRun(100, func() { _ = e.Wait(context.Background()) })
	require.Zero(t, allocs, "Wait on a set Event allocated")
}

func TestEventDoneContext(t *testing.T) {
	for _, tc := range doneCtxCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			var e ctxsync.Event
			e.Set()
			require.Equal(t, tc.want, e.Wait(tc.ctx), "Wait with a done ctx on a set Event")
			require.True(t, e.IsSet())
		})
	}
}

func TestEventContextEndsWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e ctxsync.Event
		ctx, cancel := context.WithCancel(t.Context())
		errA := make(chan error)
		go func() { errA <- e.Wait(ctx) }()
		errB := make(chan error)
		go func() { errB <- e.Wait(t.Context()) }()
		synctest.Wait()
		cancel()
		require.Equal(t, context.Canceled, <-errA)
		e.Set()
		require.NoError(t, <-errB)
	})
}

func TestEventDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e ctxsync.Event
		ctx, cancel := context.WithTimeout(t.Context(), 50)
		defer cancel()
		require.Equal(t, context.DeadlineExceeded, e.Wait(ctx))
		require.False(t, e.IsSet())
	})
}

// TestEventCancelRacesSet: whatever the waiter that gives up returns, the
// others always wake.
func TestEventCancelRacesSet(t *testing.T) {
	for range testutil.HammerRounds(1000) {
		var e ctxsync.Event
		ctx, cancel := context.WithCancel(context.Background())
		errA := make(chan error, 1)
		go func() { errA <- e.Wait(ctx) }()
		errB := make(chan error, 1)
		go func() { errB <- e.Wait(context.Background()) }()
		runtime.Gosched()
		go cancel()
		e.Set()
		if err := <-errA; err != nil {
			require.Equal(t, context.Canceled, err)
		}
		require.NoError(t, <-errB)
		cancel()
	}
}

// TestEventAcrossBubbles: an Event waited on inside a synctest bubble, then
// outside any, then in another bubble. Its channel must not carry over.
func TestEventAcrossBubbles(t *testing.T) {
	var e ctxsync.Event // as a package-level Event would be
	inBubble := func() {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10)
			defer cancel()
			require.Equal(t, context.DeadlineExceeded, e.Wait(ctx))
		})
	}
	inBubble()
	// Outside any bubble: an unset Event, so Wait takes the channel path.
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	require.Equal(t, context.DeadlineExceeded, e.Wait(ctx))
	inBubble()
	e.Set()
	require.NoError(t, e.Wait(context.Background()))
}

func TestEventMisuse(t *testing.T) {
	var e ctxsync.Event
	require.PanicsWithValue(t, "ctxsync: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_ = e.Wait(nil)
	})
}

func TestHammerEvent(t *testing.T) {
	var e ctxsync.Event
	var wg sync.WaitGroup
	rounds := testutil.HammerRounds(300)
	for g := range 32 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 6))
			for range rounds {
				switch r.IntN(6) {
				case 0:
					e.Set()
				case 1:
					e.Clear()
				case 2:
					select {
					case <-e.Done():
					default:
					}
				default:
					ctx, cancel := endingCtx(r) // nothing else is sure to Set it
					if err := e.Wait(ctx); err != nil && err != ctx.Err() {
						t.Errorf("Wait = %v", err)
					}
					cancel()
				}
			}
		})
	}
	wg.Wait()
	// However it ended, a Set now releases a waiter and closes Done.
	e.Clear()
	done := e.Done()
	woke := make(chan error)
	go func() { woke <- e.Wait(context.Background()) }()
	e.Set()
	require.NoError(t, <-woke)
	require.True(t, isClosed(done))
}

// TestEventNoLostWakeup runs rounds in which waiters that cannot time out
// block on one Event while it is re-armed and raised, with goroutines joining
// and leaving it on short contexts all the while. A lost wake-up hangs a round.
func TestEventNoLostWakeup(t *testing.T) {
	for _, waiters := range []int{1, 2, 16} {
		t.Run(fmt.Sprintf("waiters=%d", waiters), func(t *testing.T) {
			testEventNoLostWakeup(t, waiters)
		})
	}
}

func testEventNoLostWakeup(t *testing.T, waiters int) {
	rounds := testutil.HammerRounds(2000)
	var evs [2]ctxsync.Event
	evs[1].Set()
	stop := make(chan struct{})
	var churn sync.WaitGroup
	for g := range 4 {
		churn.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := endingCtx(r)
				_ = evs[r.IntN(2)].Wait(ctx)
				cancel()
			}
		})
	}
	var acks, wg sync.WaitGroup
	var done atomic.Bool
	for range waiters {
		wg.Go(func() {
			for round := 0; ; round++ {
				if err := evs[round%2].Wait(context.Background()); err != nil {
					t.Error(err)
					return
				}
				if done.Load() {
					return
				}
				acks.Done()
			}
		})
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		round := 0
		for ; round < rounds; round++ {
			acks.Add(waiters)
			evs[(round+1)%2].Clear()
			evs[round%2].Set()
			acks.Wait()
		}
		done.Store(true)
		evs[(round+1)%2].Clear()
		evs[round%2].Set()
		wg.Wait()
	}()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("a round never ended: a waiter missed its Set")
	}
	close(stop)
	churn.Wait()
}
