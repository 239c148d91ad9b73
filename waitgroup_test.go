package ctxsync_test

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestWaitGroupZeroValue(t *testing.T) {
	var wg ctxsync.WaitGroup
	require.Equal(t, 0, wg.Count())
	require.NoError(t, wg.Wait(context.Background()), "the zero WaitGroup is at zero")
	wg.Add(0)
	require.Equal(t, 0, wg.Count())
	require.PanicsWithValue(t, "ctxsync: negative WaitGroup counter", wg.Done)
	require.Equal(t, 0, wg.Count(), "the panic left the counter as it was")
	require.NoError(t, wg.Wait(context.Background()))
}

// TestWaitGroupAddExtremes: deltas at 0, ±1 and the ends of int and of the
// counter. A delta that would take the counter below zero or past
// math.MaxInt32 panics and leaves it as it was (sync.WaitGroup wraps past
// the bound and reports a negative counter).
func TestWaitGroupAddExtremes(t *testing.T) {
	const negative, overflow = "ctxsync: negative WaitGroup counter", "ctxsync: WaitGroup counter overflow"
	var wg ctxsync.WaitGroup
	for _, c := range []struct {
		delta int
		panic string
		want  int
	}{
		{0, "", 0},
		{-1, negative, 0},
		{1, "", 1},
		{math.MaxInt, overflow, 1},
		{math.MinInt, negative, 1},
		{math.MaxInt32, overflow, 1},
		{math.MaxInt32 - 1, "", math.MaxInt32},
		{1, overflow, math.MaxInt32},
		{math.MinInt32, negative, math.MaxInt32},
		{-math.MaxInt32, "", 0},
		{math.MaxInt32, "", math.MaxInt32},
		{math.MinInt32 + 1, "", 0},
	} {
		if c.panic != "" {
			require.PanicsWithValue(t, c.panic, func() { wg.Add(c.delta) }, "Add(%d)", c.delta)
		} else {
			wg.Add(c.delta)
		}
		require.Equal(t, c.want, wg.Count(), "after Add(%d)", c.delta)
	}
	require.NoError(t, wg.Wait(context.Background()))
}

func TestWaitGroupNilArguments(t *testing.T) {
	var wg ctxsync.WaitGroup
	wg.Add(1)
	//lint:ignore SA1012 a nil ctx is what is tested
	require.PanicsWithValue(t, "ctxsync: nil Context", func() { _ = wg.Wait(nil) }) //nolint:staticcheck
	require.PanicsWithValue(t, "ctxsync: WaitGroup.Go of a nil func", func() { wg.Go(nil) })
	require.Equal(t, 1, wg.Count(), "nothing counted")
	wg.Done()
}

// TestWaitGroupDoneCtx: a done ctx fails Wait, even at zero, and counts nothing.
func TestWaitGroupDoneCtx(t *testing.T) {
	for _, c := range doneCtxCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var wg ctxsync.WaitGroup
			require.Equal(t, c.want, wg.Wait(c.ctx), "at zero")
			wg.Add(2)
			require.Equal(t, c.want, wg.Wait(c.ctx), "above zero")
			require.Equal(t, 2, wg.Count())
			wg.Add(-2)
		})
	}
}

// TestWaitGroupZeroSinceWaitBegan: a Wait returns nil once the counter has
// been zero after it began, though an Add raised it again at once; one that
// begins after that zero waits for the next.
func TestWaitGroupZeroSinceWaitBegan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg ctxsync.WaitGroup
		wg.Add(1)
		early := make(chan error, 1)
		go func() { early <- wg.Wait(t.Context()) }()
		synctest.Wait()
		wg.Done()
		wg.Add(1) // before the waiter runs again
		late := make(chan error, 1)
		go func() { late <- wg.Wait(t.Context()) }()
		synctest.Wait()
		require.NoError(t, <-early, "the counter was zero after it began")
		require.Empty(t, late, "a Wait that began after the zero returned")
		wg.Done()
		require.NoError(t, <-late)
	})
}

// TestWaitGroupAddWhileWaiting: Adds while goroutines wait hold them until
// the counter reaches zero; every waiter is woken by that zero.
func TestWaitGroupAddWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg ctxsync.WaitGroup
		wg.Add(1)
		const waiters = 5
		res := make(chan error, waiters)
		for range waiters {
			go func() { res <- wg.Wait(t.Context()) }()
		}
		synctest.Wait()
		wg.Add(3)
		wg.Add(-2)
		wg.Done()
		synctest.Wait()
		require.Empty(t, res, "woken above zero")
		wg.Done()
		for range waiters {
			require.NoError(t, <-res)
		}
	})
}

// TestWaitGroupWaitTimesOut: a Wait whose deadline passes returns
// context.DeadlineExceeded, and the others go on waiting.
func TestWaitGroupWaitTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg ctxsync.WaitGroup
		wg.Add(1)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		other := make(chan error, 1)
		go func() { other <- wg.Wait(t.Context()) }()
		start := time.Now()
		require.Equal(t, context.DeadlineExceeded, wg.Wait(ctx))
		require.Equal(t, time.Second, time.Since(start), "virtual time")
		synctest.Wait()
		require.Empty(t, other)
		wg.Done()
		require.NoError(t, <-other)
	})
}

// TestWaitGroupGo: Go counts its goroutine in before it starts and out when f
// returns, or ends with runtime.Goexit; f may call back into the WaitGroup.
func TestWaitGroupGo(t *testing.T) {
	var wg ctxsync.WaitGroup
	var ran atomic.Int32
	for range 10 {
		wg.Go(func() {
			wg.Go(func() { ran.Add(1) }) // Go from a task: counted before this one is done
			ran.Add(1)
		})
	}
	wg.Go(func() {
		defer ran.Add(1)
		runtime.Goexit()
	})
	require.NoError(t, wg.Wait(context.Background()))
	require.Equal(t, int32(21), ran.Load())
	require.Equal(t, 0, wg.Count())

	// A task that waits for its own group waits for itself: its ctx ends it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	res := make(chan error, 1)
	wg.Go(func() { res <- wg.Wait(ctx) })
	require.Equal(t, context.DeadlineExceeded, <-res)
	require.NoError(t, wg.Wait(context.Background()))
}

// TestWaitGroupGrantRace: the counter reaches zero at the moment a waiter's
// ctx ends (after it ended): the waiter fails, and the waiter behind it is
// woken all the same.
func TestWaitGroupGrantRace(t *testing.T) {
	var wg ctxsync.WaitGroup
	errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
		wg.Add(1)
		return grantRace{first: wg.Wait, second: wg.Wait, grant: wg.Done}
	})
	require.Equal(t, context.Canceled, errA)
	require.NoError(t, errB)
	require.Equal(t, 0, wg.Count())
}

// TestWaitGroupCancelledWaiterNotWoken: a waiter whose ctx ended before the
// counter reached zero fails, whatever the interleaving.
func TestWaitGroupCancelledWaiterNotWoken(t *testing.T) {
	var wg *ctxsync.WaitGroup
	cancelThenFree(t, 2000, func() (func(context.Context) error, func(), func()) {
		wg = new(ctxsync.WaitGroup)
		wg.Add(1)
		return wg.Wait, wg.Done, func() { require.Equal(t, 0, wg.Count()) }
	})
}

// TestWaitGroupCancelRaces: the same race left to chance, with a second
// waiter that must be woken.
func TestWaitGroupCancelRaces(t *testing.T) {
	var wg *ctxsync.WaitGroup
	runCancelRaces(t, 300, func(t *testing.T) cancelRace {
		wg = new(ctxsync.WaitGroup)
		wg.Add(1)
		return cancelRace{
			grantRace:     grantRace{first: wg.Wait, second: wg.Wait, grant: wg.Done},
			releaseFirst:  func() {},
			releaseSecond: func() {},
			check:         func(t *testing.T) { require.Equal(t, 0, wg.Count()) },
		}
	})
}

func waitGroupHandover(wg *ctxsync.WaitGroup) handover {
	return handover{
		name:  "WaitGroup",
		take:  func(context.Context) error { wg.Add(1); return nil },
		wait:  wg.Wait,
		give:  wg.Done,
		after: func() {},
	}
}

// TestWaitGroupAcrossBubbles: a WaitGroup made outside any bubble is used in
// one (a waiter is durably blocked, its timeout fires on virtual time), then
// outside, then in another; one made in a bubble keeps working after it.
func TestWaitGroupAcrossBubbles(t *testing.T) {
	var wg ctxsync.WaitGroup
	h := waitGroupHandover(&wg)
	synctest.Test(t, func(t *testing.T) { h.run(t) })
	h.run(t)
	synctest.Test(t, func(t *testing.T) { h.run(t) })

	var made *ctxsync.WaitGroup
	synctest.Test(t, func(t *testing.T) {
		made = new(ctxsync.WaitGroup)
		waitGroupHandover(made).run(t)
	})
	waitGroupHandover(made).run(t)
}

// TestWaitGroupGoInBubble: goroutines started by Go in a bubble belong to it,
// and Wait on them is durably blocked, so virtual time moves on.
func TestWaitGroupGoInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg ctxsync.WaitGroup
		start := time.Now()
		for i := range 3 {
			wg.Go(func() { time.Sleep(time.Duration(i+1) * time.Hour) })
		}
		require.NoError(t, wg.Wait(t.Context()))
		require.Equal(t, 3*time.Hour, time.Since(start))
	})
}

// TestWaitGroupWaitLeavesNothing: Waits that give up leave no goroutine
// behind (the wrapper users write, a goroutine that calls sync's Wait and
// closes a channel, leaks one per timed-out Wait) and no memory: the heap
// after many is where it began.
func TestWaitGroupWaitLeavesNothing(t *testing.T) {
	var wg ctxsync.WaitGroup
	wg.Add(1)
	goroutines := runtime.NumGoroutine()
	heap := heapBytesAfterGC()
	for range 20000 {
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		if err := wg.Wait(ctx); err != context.Canceled {
			t.Fatalf("Wait = %v, want context.Canceled", err)
		}
	}
	// The goroutines that cancelled may still be on their way out: give
	// them time, which a loaded machine may need.
	for i := 0; runtime.NumGoroutine() > goroutines && i < 5000; i++ {
		time.Sleep(time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "goroutines left behind")
	require.InDelta(t, heap, heapBytesAfterGC(), 64<<10, "heap in use, in bytes, before and after")
	wg.Done()
	require.NoError(t, wg.Wait(context.Background()))
}

// heapBytesAfterGC returns the bytes of live heap objects after a full collection.
func heapBytesAfterGC() float64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc)
}

// TestHammerWaitGroup: tasks that start tasks, waiters with random deadlines
// and cancellations. A Wait that returns nil finds every task started before
// it done (tasks start their children before they are done, so the counter
// never reaches zero early); one that fails returns its ctx's error. At the
// end the counter is zero and every goroutine has returned.
func TestHammerWaitGroup(t *testing.T) {
	for round := range testutil.HammerRounds(20) {
		var wg ctxsync.WaitGroup
		var started, done atomic.Int64
		var task func(r *rand.Rand, depth int)
		task = func(r *rand.Rand, depth int) {
			if depth < 3 {
				for range r.IntN(3) {
					started.Add(1)
					seed := r.Uint64()
					wg.Go(func() { task(rand.New(rand.NewPCG(seed, 0)), depth+1) })
				}
			}
			if r.IntN(3) == 0 {
				runtime.Gosched()
			}
			done.Add(1)
		}
		r := rand.New(rand.NewPCG(uint64(round), 7))
		for range 16 {
			started.Add(1)
			seed := r.Uint64()
			wg.Go(func() { task(rand.New(rand.NewPCG(seed, 1)), 0) })
		}
		var waiters sync.WaitGroup
		for id := range 8 {
			waiters.Go(func() {
				r := rand.New(rand.NewPCG(uint64(round), uint64(id)))
				for range 20 {
					ctx, cancel := randomCtx(r)
					err := wg.Wait(ctx)
					switch {
					case err == nil:
						if s, d := started.Load(), done.Load(); d != s {
							t.Errorf("Wait returned nil with %d of %d tasks done", d, s)
						}
					case err != context.Canceled && err != context.DeadlineExceeded:
						t.Errorf("Wait = %v, want nil or a ctx error", err)
					}
					cancel()
				}
			})
		}
		waiters.Wait()
		require.NoError(t, wg.Wait(context.Background()))
		require.Equal(t, 0, wg.Count())
		require.Equal(t, started.Load(), done.Load())
	}
}
