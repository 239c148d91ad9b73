package ctxsync_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// A watchGot is what one Wait returned.
type watchGot[T any] struct {
	v   T
	ver uint64
	err error
}

// watchGo runs w.Wait(ctx, after) in a goroutine; its result arrives on the
// channel.
func watchGo[T any](ctx context.Context, w *ctxsync.Watch[T], after uint64) <-chan watchGot[T] {
	res := make(chan watchGot[T], 1)
	go func() {
		v, ver, err := w.Wait(ctx, after)
		res <- watchGot[T]{v, ver, err}
	}()
	return res
}

// watchPending reports, after synctest.Wait, that the Wait behind res has not
// returned.
func watchPending[T any](t *testing.T, res <-chan watchGot[T]) {
	t.Helper()
	synctest.Wait()
	require.Empty(t, res, "Wait returned; want it waiting")
}

// watchReturned checks the Wait behind res returned want.
func watchReturned[T any](t *testing.T, res <-chan watchGot[T], want watchGot[T]) {
	t.Helper()
	synctest.Wait()
	require.NotEmpty(t, res, "Wait still waits; want it to return %v", want)
	require.Equal(t, want, <-res)
}

func TestWatchLoadStoreVersions(t *testing.T) {
	w := ctxsync.NewWatch("one")
	v, ver := w.Load()
	require.Equal(t, "one", v)
	require.Equal(t, uint64(1), ver, "NewWatch's version")
	for i, s := range []string{"two", "three", "three"} {
		w.Store(s) // storing an equal value is a change too
		v, ver = w.Load()
		require.Equal(t, s, v)
		require.Equal(t, uint64(i+2), ver, "version after %d Stores", i+1)
	}
}

// TestWatchZeroValue: the zero Watch is NewWatch of the zero T.
func TestWatchZeroValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w ctxsync.Watch[int]
		v, ver := w.Load()
		require.Equal(t, 0, v)
		require.Equal(t, uint64(1), ver)
		v, ver, err := w.Wait(t.Context(), 0)
		require.NoError(t, err)
		require.Equal(t, 0, v)
		require.Equal(t, uint64(1), ver)

		res := watchGo(t.Context(), &w, 1)
		watchPending(t, res)
		w.Store(7)
		watchReturned(t, res, watchGot[int]{7, 2, nil})

		var closed ctxsync.Watch[int]
		closed.Close()
		_, _, err = closed.Wait(t.Context(), 1)
		require.Equal(t, ctxsync.ErrClosed, err, "zero Watch, closed")
		v, ver, err = closed.Wait(t.Context(), 0)
		require.NoError(t, err)
		require.Equal(t, 0, v)
		require.Equal(t, uint64(1), ver)
	})
}

// TestWatchWaitAfter takes after at 0, 1, the current version, above it, and
// at the maximum.
func TestWatchWaitAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWatch(10)
		w.Store(11) // version 2
		for _, after := range []uint64{0, 1} {
			v, ver, err := w.Wait(t.Context(), after)
			require.NoError(t, err, "Wait(%d)", after)
			require.Equal(t, 11, v)
			require.Equal(t, uint64(2), ver)
		}

		// Above the current version: waits until the version passes after,
		// not merely for the next Store.
		far := watchGo(t.Context(), w, 3)
		next := watchGo(t.Context(), w, 2)
		watchPending(t, far)
		watchPending(t, next)
		w.Store(12)
		watchReturned(t, next, watchGot[int]{12, 3, nil})
		watchPending(t, far)
		w.Store(13)
		watchReturned(t, far, watchGot[int]{13, 4, nil})

		// No version is above the maximum: only the ctx or Close ends it.
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		_, _, err := w.Wait(ctx, math.MaxUint64)
		require.Equal(t, context.DeadlineExceeded, err, "Wait(MaxUint64)")
		maxed := watchGo(t.Context(), w, math.MaxUint64)
		watchPending(t, maxed)
		w.Close()
		watchReturned(t, maxed, watchGot[int]{0, 0, ctxsync.ErrClosed})
	})
}

// TestWatchStoreWakesEveryWaiterOnce: one Store wakes them all, each with
// the new value, and each only once: a waiter that comes back waits for the
// next Store.
func TestWatchStoreWakesEveryWaiterOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWatch(0)
		var res []<-chan watchGot[int]
		for range 16 {
			res = append(res, watchGo(t.Context(), w, 1))
		}
		for _, r := range res {
			watchPending(t, r)
		}
		w.Store(1)
		for _, r := range res {
			watchReturned(t, r, watchGot[int]{1, 2, nil})
		}
		again := watchGo(t.Context(), w, 2)
		watchPending(t, again)
		w.Store(2)
		watchReturned(t, again, watchGot[int]{2, 3, nil})
	})
}

// TestWatchDoneCtx: a done ctx fails even when a newer version is there, and
// changes nothing.
func TestWatchDoneCtx(t *testing.T) {
	for _, c := range doneCtxCases(t) {
		t.Run(c.name, func(t *testing.T) {
			w := ctxsync.NewWatch("a")
			w.Store("b")
			v, ver, err := w.Wait(c.ctx, 0)
			require.Equal(t, c.want, err)
			require.Equal(t, "", v)
			require.Equal(t, uint64(0), ver)
			w.Close()
			_, _, err = w.Wait(c.ctx, 5)
			require.Equal(t, c.want, err, "a done ctx on a closed Watch: the ctx first")
			n := 0
			for range w.Changes(c.ctx) {
				n++
			}
			require.Zero(t, n, "Changes with a done ctx yields nothing")
			v, ver = w.Load()
			require.Equal(t, "b", v)
			require.Equal(t, uint64(2), ver)
		})
	}
}

func TestWatchNilCtxPanics(t *testing.T) {
	w := ctxsync.NewWatch(0)
	require.PanicsWithValue(t, "ctxsync: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		w.Wait(nil, 0) //nolint:staticcheck
	})
	require.PanicsWithValue(t, "ctxsync: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		w.Changes(nil) //nolint:staticcheck
	}, "Changes panics when called, not when ranged over")
}

// TestWatchCancelWhileWaiting: a Wait whose ctx ends returns ctx.Err(), and
// the others still get the next Store.
func TestWatchCancelWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWatch(0)
		ctx, cancel := context.WithCancel(t.Context())
		gone := watchGo(ctx, w, 1)
		stay := watchGo(t.Context(), w, 1)
		timed, cancelTimed := context.WithTimeout(t.Context(), time.Second)
		defer cancelTimed()
		late := watchGo(timed, w, 1)
		watchPending(t, gone)
		cancel()
		watchReturned(t, gone, watchGot[int]{0, 0, context.Canceled})
		time.Sleep(time.Second)
		watchReturned(t, late, watchGot[int]{0, 0, context.DeadlineExceeded})
		watchPending(t, stay)
		w.Store(1)
		watchReturned(t, stay, watchGot[int]{1, 2, nil})
	})
}

// TestWatchCancelRacesStore ends a waiter's ctx and Stores before the waiter
// runs again (one processor makes the race happen every time). The waiter may
// return either; the Store wakes the other waiter regardless, and the Watch
// works on.
func TestWatchCancelRacesStore(t *testing.T) {
	testutil.OneProcessor(t)
	for range 50 {
		w := ctxsync.NewWatch(0)
		ctx, cancel := context.WithCancel(context.Background())
		racing := watchGo(ctx, w, 1)
		other := watchGo(context.Background(), w, 1)
		for ctxsync.WatchWaiting(w) < 2 {
			time.Sleep(10 * time.Microsecond)
		}
		cancel()
		w.Store(1)
		r := <-racing
		if r.err == nil {
			require.Equal(t, watchGot[int]{1, 2, nil}, r)
		} else {
			require.Equal(t, watchGot[int]{0, 0, context.Canceled}, r)
		}
		require.Equal(t, watchGot[int]{1, 2, nil}, <-other)
		require.Zero(t, ctxsync.WatchWaiting(w))
		next := watchGo(context.Background(), w, 2)
		w.Store(2)
		require.Equal(t, watchGot[int]{2, 3, nil}, <-next)
	}
}

// TestWatchClose: waits that have nothing newer end with ErrClosed; one
// whose after is below the current version still gets it; Load works; Store
// after Close changes nothing; Close twice is fine.
func TestWatchClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWatch("a")
		res := watchGo(t.Context(), w, 1)
		watchPending(t, res)
		w.Close()
		watchReturned(t, res, watchGot[string]{"", 0, ctxsync.ErrClosed})

		v, ver, err := w.Wait(t.Context(), 0)
		require.NoError(t, err, "after Close, an older after still gets the value")
		require.Equal(t, "a", v)
		require.Equal(t, uint64(1), ver)
		_, _, err = w.Wait(t.Context(), 1)
		require.Equal(t, ctxsync.ErrClosed, err)

		w.Store("b") // dropped: Close is final
		v, ver = w.Load()
		require.Equal(t, "a", v, "Store after Close")
		require.Equal(t, uint64(1), ver, "Store after Close")
		w.Close()
		_, _, err = w.Wait(t.Context(), 1)
		require.Equal(t, ctxsync.ErrClosed, err, "after a second Close")
	})
}

// TestWatchCloseAfterStores: a waiter that had not seen the last Stores gets
// the latest after Close, then ErrClosed.
func TestWatchCloseAfterStores(t *testing.T) {
	w := ctxsync.NewWatch(1)
	w.Store(2)
	w.Store(3)
	w.Close()
	v, ver, err := w.Wait(context.Background(), 1)
	require.NoError(t, err)
	require.Equal(t, 3, v)
	require.Equal(t, uint64(3), ver)
	_, _, err = w.Wait(context.Background(), ver)
	require.Equal(t, ctxsync.ErrClosed, err)
}

// TestWatchChanges: the current value first, then each newer one; values
// stored while the body runs collapse into the latest; Close ends the loop
// after the latest value.
func TestWatchChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWatch(1)
		seen := make(chan int)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for v := range w.Changes(t.Context()) {
				seen <- v
			}
		}()
		require.Equal(t, 1, <-seen)
		w.Store(2)
		require.Equal(t, 2, <-seen)
		w.Store(3)
		synctest.Wait() // the loop body is blocked sending 3
		w.Store(4)
		w.Store(5)
		require.Equal(t, 3, <-seen)
		require.Equal(t, 5, <-seen, "4 is skipped: only the latest is kept")
		w.Store(6)
		w.Close()
		require.Equal(t, 6, <-seen, "the value stored before Close comes before the end")
		<-done
	})
}

// TestWatchChangesEnds: the loop ends when ctx ends; a break leaves nobody
// waiting; each range starts from the current value.
func TestWatchChangesEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWatch("x")
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var vs []string
		for v := range w.Changes(ctx) {
			vs = append(vs, v)
		}
		require.Equal(t, []string{"x"}, vs, "ctx ended while waiting")
		require.Equal(t, context.DeadlineExceeded, ctx.Err())
		require.Zero(t, ctxsync.WatchWaiting(w), "nobody left waiting")

		seq := w.Changes(t.Context())
		for v := range seq {
			require.Equal(t, "x", v)
			break
		}
		w.Store("y")
		for v := range seq {
			require.Equal(t, "y", v, "a second range starts from the current value")
			break
		}
		require.Zero(t, ctxsync.WatchWaiting(w))

		w.Close()
		vs = nil
		for v := range w.Changes(t.Context()) {
			vs = append(vs, v)
		}
		require.Equal(t, []string{"y"}, vs, "on a closed Watch, the current value, then the end")
	})
}

// TestWatchChangesBodyCallsBack: the loop body may Store, Load, Wait on and
// Close the same Watch: no lock is held while it runs.
func TestWatchChangesBodyCallsBack(t *testing.T) {
	w := ctxsync.NewWatch(0)
	var vs []int
	for v := range w.Changes(context.Background()) {
		vs = append(vs, v)
		cur, ver := w.Load()
		require.Equal(t, v, cur)
		_, _, err := w.Wait(context.Background(), ver-1)
		require.NoError(t, err)
		if v == 3 {
			w.Close()
			continue
		}
		w.Store(v + 1)
	}
	require.Equal(t, []int{0, 1, 2, 3}, vs)
}

// TestWatchChangesBodyPanics: a panic in the body reaches the ranging
// goroutine and leaves the Watch whole.
func TestWatchChangesBodyPanics(t *testing.T) {
	w := ctxsync.NewWatch(0)
	require.PanicsWithValue(t, "boom", func() {
		for range w.Changes(context.Background()) {
			panic("boom")
		}
	})
	require.Zero(t, ctxsync.WatchWaiting(w))
	res := watchGo(context.Background(), w, 1)
	w.Store(1)
	require.Equal(t, watchGot[int]{1, 2, nil}, <-res)
}

// TestWatchAcrossBubbles: a Watch made outside every bubble is waited on in
// one, then outside, then in another; one made in a bubble is used after it
// ended. No channel of one bubble may carry over to the next use: that would
// be a fatal error.
func TestWatchAcrossBubbles(t *testing.T) {
	outside := ctxsync.NewWatch(0)
	var inside *ctxsync.Watch[int]
	use := func(w *ctxsync.Watch[int]) {
		_, ver := w.Load()
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_, _, err := w.Wait(ctx, ver)
		cancel()
		require.Equal(t, context.DeadlineExceeded, err, "a wait that times out")
		res := watchGo(context.Background(), w, ver)
		time.Sleep(time.Millisecond) // virtual inside a bubble
		w.Store(int(ver))
		require.Equal(t, watchGot[int]{int(ver), ver + 1, nil}, <-res)
		for v := range w.Changes(context.Background()) {
			require.Equal(t, int(ver), v)
			break
		}
	}
	synctest.Test(t, func(t *testing.T) {
		use(outside)
		inside = ctxsync.NewWatch(0)
		use(inside)
		// A waiter that gave up inside the bubble leaves no channel behind.
		ctx, cancel := context.WithCancel(context.Background())
		res := watchGo(ctx, inside, 99)
		synctest.Wait()
		cancel()
		require.Equal(t, context.Canceled, (<-res).err)
	})
	use(outside)
	use(inside)
	synctest.Test(t, func(t *testing.T) {
		use(outside)
		use(inside)
	})
}

// TestWatchSlowReaderNeverSlowsStore: readers that do not come back for the
// value do not hold up Stores, and a reader that comes back late sees only
// the latest.
func TestWatchSlowReaderNeverSlowsStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWatch(0)
		block := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for v := range w.Changes(t.Context()) {
				if v == 0 {
					<-block // slow: holds the loop body
				}
				if v != 0 {
					assert.Equal(t, 1000, v, "the late reader sees only the latest")
					return
				}
			}
		})
		synctest.Wait()
		for i := 1; i <= 1000; i++ {
			w.Store(i) // never waits for the reader
		}
		close(block)
		wg.Wait()
	})
}

// TestHammerWatch: a storer and a closer race readers that Wait, range over
// Changes and Load, under random ctxs. Each value is its version, so a reader
// checks every value against its version, that versions only grow, and that
// a Wait returns a version above its after. At the end nobody is left
// counted on the Watch's channel.
func TestHammerWatch(t *testing.T) {
	for round := range testutil.HammerRounds(20) {
		w := ctxsync.NewWatch(1) // the value is the version
		var wg sync.WaitGroup
		readers := make(chan struct{})
		for id := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(round), uint64(id)))
				var last uint64
				check := func(v int, ver uint64) {
					if uint64(v) != ver || ver < last {
						panic(fmt.Sprintf("value %d at version %d after version %d", v, ver, last))
					}
					last = ver
				}
				for {
					select {
					case <-readers:
						return
					default:
					}
					ctx, cancel := randomCtx(r)
					switch r.IntN(3) {
					case 0:
						after := last - min(last, uint64(r.IntN(2)))
						v, ver, err := w.Wait(ctx, after)
						switch {
						case err == nil:
							if ver <= after {
								panic(fmt.Sprintf("Wait(%d) returned version %d", after, ver))
							}
							check(v, ver)
						case err == ctxsync.ErrClosed:
							if _, cur := w.Load(); cur > after {
								panic("ErrClosed with a newer version there")
							}
						case err != ctx.Err():
							panic(fmt.Sprintf("Wait: %v with ctx %v", err, ctx.Err()))
						}
					case 1:
						n := r.IntN(4)
						for v := range w.Changes(ctx) {
							check(v, uint64(v))
							if n--; n < 0 {
								break
							}
						}
					default:
						check(w.Load())
					}
					cancel()
				}
			})
		}
		for i := 2; i <= 300; i++ {
			w.Store(i)
			if i%50 == 0 {
				time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
			}
		}
		w.Close()
		w.Store(-1) // dropped: Close is final
		close(readers)
		wg.Wait()
		v, ver := w.Load()
		require.Equal(t, 300, v)
		require.Equal(t, uint64(300), ver)
		require.Zero(t, ctxsync.WatchWaiting(w), "waiters left counted")
	}
}

// TestWatchVersion: Version agrees with Load's version, for the zero Watch
// too, and after Close.
func TestWatchVersion(t *testing.T) {
	var zero ctxsync.Watch[int]
	if v := zero.Version(); v != 1 {
		t.Fatalf("zero Watch: Version() = %d, want 1", v)
	}
	w := ctxsync.NewWatch("a")
	for i := range 3 {
		if _, lv := w.Load(); w.Version() != lv || lv != uint64(i+1) {
			t.Fatalf("Version() = %d, Load's version %d, want %d", w.Version(), lv, i+1)
		}
		w.Store("b")
	}
	w.Close()
	if v := w.Version(); v != 4 {
		t.Fatalf("after Close: Version() = %d, want 4", v)
	}
}
