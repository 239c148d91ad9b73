package ctxsync_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// A grantRace is the race the rules care most about, set up to happen for
// sure: a waiter's ctx ends, and before the waiter runs again, what it waited
// for is handed to it. The waiter then wakes for its ctx with the grant in
// hand, and must keep it or pass it on, never drop it.
type grantRace struct {
	first  func(ctx context.Context) error // the waiter whose ctx ends
	second func(ctx context.Context) error // queued behind it, with a ctx that does not end; or nil
	grant  func()                          // hands first what it waits for
}

// runGrantRace runs the race on one processor (testutil.OneProcessor), inside
// a synctest bubble: it starts first, then second, lets each block, then ends
// first's ctx and calls grant with no chance for first to run in between. It
// returns their errors.
// If a grant is lost, second waits forever and the bubble reports a deadlock.
func runGrantRace(t *testing.T, setup func(t *testing.T) grantRace) (errFirst, errSecond error) {
	t.Helper()
	testutil.OneProcessor(t)
	synctest.Test(t, func(t *testing.T) {
		r := setup(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		first, second := make(chan error, 1), make(chan error, 1)
		go func() { first <- r.first(ctx) }()
		synctest.Wait()
		if r.second != nil {
			go func() { second <- r.second(t.Context()) }()
			synctest.Wait()
		} else {
			second <- nil
		}
		cancel()
		r.grant()
		errFirst, errSecond = <-first, <-second
	})
	return errFirst, errSecond
}

// A cancelRace is the same race left to chance: first's ctx is cancelled from
// another goroutine while grant runs, on every processor, round after round,
// so that every interleaving turns up, the grant beating the cancellation and
// the other way round. Whoever got through gives back what it took, and check
// then finds nothing lost or made up.
type cancelRace struct {
	grantRace
	releaseFirst, releaseSecond func() // give back what first and second took
	check                       func(t *testing.T)
}

// runCancelRaces runs the race rounds times, each on what setup returns:
// first and second queued, most often in that order. first may fail only with
// context.Canceled; second, whose ctx never ends, must get through.
func runCancelRaces(t *testing.T, rounds int, setup func(t *testing.T) cancelRace) {
	t.Helper()
	for range testutil.HammerRounds(rounds) {
		r := setup(t)
		ctx, cancel := context.WithCancel(context.Background())
		first, second := make(chan error, 1), make(chan error, 1)
		go func() { first <- r.first(ctx) }()
		go func() { second <- r.second(context.Background()) }()
		runtime.Gosched()

		go cancel()
		r.grant()
		// They get through in turn, or at once, or first gives up; each
		// that got through gives back once, which may be what the other
		// waits for.
		for range 2 {
			select {
			case err := <-first:
				if err == nil {
					r.releaseFirst()
				} else {
					require.Equal(t, context.Canceled, err)
				}
				first = nil
			case err := <-second:
				require.NoError(t, err)
				r.releaseSecond()
				second = nil
			}
		}
		r.check(t)
		cancel()
	}
}

func TestGrantRaceLock(t *testing.T) {
	var l ctxsync.Lock
	errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
		require.NoError(t, l.Lock(t.Context()))
		return grantRace{first: l.Lock, second: l.Lock, grant: l.Unlock}
	})
	require.Equal(t, context.Canceled, errA)
	require.NoError(t, errB, "the lock was passed on")
	l.Unlock()
	require.False(t, l.Locked())
}

func TestGrantRaceSemaphore(t *testing.T) {
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			s := k.new(1)
			errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
				require.NoError(t, s.Acquire(t.Context()))
				return grantRace{first: s.Acquire, second: s.Acquire, grant: s.Release}
			})
			require.Equal(t, context.Canceled, errA)
			require.NoError(t, errB, "the permit was passed on")
			require.Equal(t, 0, s.Available())
			require.Equal(t, 0, s.Waiting())
			s.Release()
			require.Equal(t, 1, s.Available())
		})
	}
}

func TestGrantRaceWeighted(t *testing.T) {
	w := ctxsync.NewWeighted(3)
	errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
		require.NoError(t, w.Acquire(t.Context(), 3))
		return grantRace{first: acquireOf(w, 2), second: acquireOf(w, 3), grant: func() { w.Release(3) }}
	})
	require.Equal(t, context.Canceled, errA)
	require.NoError(t, errB, "the units were passed on")
	require.Equal(t, int64(0), w.Available())
	w.Release(3)
	require.Equal(t, int64(3), w.Available())
}

func TestGrantRaceRWLock(t *testing.T) {
	for _, firstReads := range []bool{false, true} {
		var rw ctxsync.RWLock
		first := rw.Lock
		if firstReads {
			first = rw.RLock
		}
		errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
			require.NoError(t, rw.Lock(t.Context()))
			return grantRace{first: first, second: rw.Lock, grant: rw.Unlock}
		})
		require.Equal(t, context.Canceled, errA)
		require.NoError(t, errB, "the lock was passed on to the writer behind")
		require.False(t, rw.TryRLock())
		rw.Unlock()
		require.True(t, rw.TryLock())
		rw.Unlock()
	}
}

func TestGrantRaceCondition(t *testing.T) {
	c := ctxsync.NewCondition(nil)
	wait := func(ctx context.Context) error {
		if err := c.Lock(context.Background()); err != nil {
			return err
		}
		defer c.Unlock()
		return c.Wait(ctx)
	}
	errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
		return grantRace{first: wait, second: wait, grant: func() {
			require.True(t, c.TryLock())
			c.Notify(1)
			c.Unlock()
		}}
	})
	require.Equal(t, context.Canceled, errA)
	require.NoError(t, errB, "the notification was passed on")
}

func TestGrantRaceQueue(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		// A consumer handed an item as its ctx ends passes it on.
		q := newQ(1)
		got := -1
		errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
			get := func(ctx context.Context) error {
				v, err := q.Get(ctx)
				if err == nil {
					got = v
				}
				return err
			}
			return grantRace{first: get, second: get, grant: func() { require.True(t, q.TryPut(42)) }}
		})
		require.Equal(t, context.Canceled, errA)
		require.NoError(t, errB)
		require.Equal(t, 42, got, "the item was passed on")
		require.Zero(t, q.Len())

		// A producer whose ctx ended before room came is not let in.
		q = newQ(1)
		errA, _ = runGrantRace(t, func(t *testing.T) grantRace {
			require.True(t, q.TryPut(1))
			put := func(ctx context.Context) error { return q.Put(ctx, 2) }
			return grantRace{first: put, grant: func() {
				v, ok := q.TryGet()
				require.True(t, ok)
				require.Equal(t, 1, v)
			}}
		})
		require.Equal(t, context.Canceled, errA, "room came after ctx ended")
		require.Zero(t, q.Len())
	})
}

func TestGrantRaceJoin(t *testing.T) {
	q := ctxsync.NewQueue[int](0)
	errA, _ := runGrantRace(t, func(t *testing.T) grantRace {
		require.True(t, q.TryPut(1))
		_, ok := q.TryGet()
		require.True(t, ok)
		return grantRace{first: q.Join, grant: q.TaskDone}
	})
	require.Equal(t, context.Canceled, errA, "everything was done after ctx ended")
	require.NoError(t, q.Join(context.Background()))
}

// TestGrantRaceBarrier: a party whose ctx ended before the last party came
// had given up. Its Wait returns ctx.Err() and the round breaks: the round
// is not completed with a party that had left. (It used to be released with
// success, and the action ran.)
func TestGrantRaceBarrier(t *testing.T) {
	actions := 0
	b := ctxsync.NewBarrier(2, func() error { actions++; return nil })
	errA, _ := runGrantRace(t, func(t *testing.T) grantRace {
		wait := func(ctx context.Context) error { _, err := b.Wait(ctx); return err }
		return grantRace{first: wait, grant: func() {
			_, err := b.Wait(context.Background())
			require.Equal(t, ctxsync.ErrBrokenBarrier, err)
		}}
	})
	require.Equal(t, context.Canceled, errA, "the party had given up")
	require.True(t, b.Broken())
	require.Zero(t, actions, "no action for a round a party had left")
}
