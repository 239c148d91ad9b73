package ctxsync_test

// The tests of this file are tokio's tests of its semaphores, re-expressed
// against Semaphore and Weighted, one Go test per tokio test, named after it:
// tokio/tests/sync_semaphore.rs (Semaphore), tokio/tests/
// sync_semaphore_owned.rs (Owned) and tokio/src/sync/tests/
// semaphore_batch.rs (Batch). A request for n permits is Weighted.Acquire(n);
// a request for one is Semaphore.Acquire.
//
// How tokio's steps read here:
//
//   - A future spawned and polled once is a call in a goroutine of the test's
//     bubble (tkSpawn); "pending" is that it has not returned once the bubble
//     is idle (synctest.Wait), "woken and ready" that it has. Dropping a
//     pending future is ending its ctx (tkTask.drop).
//   - A permit is not a value that releases itself when dropped: the holder
//     calls Release. forget() is a permit never released.
//
// Where our contract differs by design (doc.go and each type's doc):
//
//   - Partial grants: tokio's batch semaphore assigns permits to the head
//     waiter as they come, so available_permits() drops to 0 while a large
//     request waits. Weighted grants all n units at once and leaves them free
//     until then: Available keeps counting them (poll_acquire_many_unavailable,
//     cancel_acquire_releases_permits), and nobody behind the head takes them.
//   - add_permits(n): Semaphore.Release beyond the count raises it by one;
//     Weighted has no units to add but a capacity to Resize, which a waiter
//     must fit (add_permits, update_permits_many_times).
//   - forget_permits(n): Resize to a smaller capacity; it may go below the
//     units held, and then Available goes negative until they come back.
//   - A request above the capacity: tokio queues it until add_permits makes
//     room; Acquire panics on a Weighted never resized and returns
//     ErrExceedsCapacity once Resize has been called (update_permits_many_times,
//     poll_acquire_one_zero_permits).
//   - MAX_PERMITS is tokio's usize::MAX >> 3; ours are math.MaxInt64 for a
//     Semaphore and MaxWeightedCapacity (2⁶⁰-1) for a Weighted.
//   - merge, merge_unrelated_permits: permits are not values; Weighted.Release
//     may return, at once, units taken by several calls, and panics when it
//     returns more than are held, which is what releasing another
//     semaphore's permits comes to when this one is full.
//   - release_permits_at_drop: tokio's waker is user code that the semaphore
//     runs; ours are the caller's ctx's methods, and a ctx that releases a
//     permit from its Err or Done must not deadlock the Acquire it is given to.
//
// Skipped, with no counterpart:
//
//   - close_semaphore_prevents_acquire, close_semaphore_notifies_permit1,
//     close_semaphore_notifies_permit2 (Batch): Semaphore and Weighted have no
//     Close; a caller that must stop waiters ends their ctx.
//   - Owned's acquire, add_permits, forget, merge, merge_unrelated_permits and
//     stress_test repeat Semaphore's: there is one kind of permit here, and
//     they are ported once.

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// tkOut is what a spawned call returned.
type tkOut[T any] struct {
	v   T
	err error
}

// tkTask is a tokio future spawned on the test's bubble: a call running in a
// goroutine of its own, under a ctx that drop ends.
type tkTask[T any] struct {
	out    chan tkOut[T]
	cancel context.CancelFunc
}

// tkSpawnV starts call in a goroutine of the current bubble and lets it run
// until it returns or blocks.
func tkSpawnV[T any](call func(context.Context) (T, error)) *tkTask[T] {
	ctx, cancel := context.WithCancel(context.Background())
	k := &tkTask[T]{make(chan tkOut[T], 1), cancel}
	go func() {
		v, err := call(ctx)
		k.out <- tkOut[T]{v, err}
	}()
	synctest.Wait()
	return k
}

// tkSpawn is tkSpawnV for a call that returns only an error.
func tkSpawn(call func(context.Context) error) *tkTask[struct{}] {
	return tkSpawnV(func(ctx context.Context) (struct{}, error) { return struct{}{}, call(ctx) })
}

// pending fails t unless the call still waits once the bubble is idle.
func (k *tkTask[T]) pending(t *testing.T, what string) {
	t.Helper()
	synctest.Wait()
	require.Empty(t, k.out, "%s returned; want it pending", what)
}

// ready waits for the bubble to be idle and returns what the call returned,
// failing t if it still waits.
func (k *tkTask[T]) ready(t *testing.T, what string) (T, error) {
	t.Helper()
	synctest.Wait()
	require.NotEmpty(t, k.out, "%s is pending; want it returned", what)
	o := <-k.out
	k.cancel()
	return o.v, o.err
}

// drop ends the call's ctx, as dropping a pending future does, and returns
// what the call returned.
func (k *tkTask[T]) drop(t *testing.T, what string) (T, error) {
	t.Helper()
	k.cancel()
	return k.ready(t, what)
}

func tkAcquire(s *ctxsync.Semaphore) func(context.Context) error {
	return func(ctx context.Context) error { return s.Acquire(ctx) }
}

func tkAcquireN(w *ctxsync.Weighted, n int64) func(context.Context) error {
	return func(ctx context.Context) error { return w.Acquire(ctx, n) }
}

// --- tokio/tests/sync_semaphore.rs

func TestPortTokioSemaphoreNoPermits(t *testing.T) {
	s := ctxsync.NewSemaphore(0) // no panic
	require.Equal(t, 0, s.Available())
	require.False(t, s.TryAcquire())
}

func TestPortTokioSemaphoreTryAcquire(t *testing.T) {
	s := ctxsync.NewSemaphore(1)
	require.True(t, s.TryAcquire())
	require.False(t, s.TryAcquire(), "TryAcquire with the only permit held")
	s.Release()
	require.True(t, s.TryAcquire())
}

func TestPortTokioSemaphoreAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := ctxsync.NewSemaphore(1)
		require.True(t, s.TryAcquire())
		j := tkSpawn(tkAcquire(s))
		j.pending(t, "Acquire")
		s.Release()
		_, err := j.ready(t, "Acquire")
		require.NoError(t, err)
		require.Equal(t, 0, s.Available(), "the waiter holds the permit")
	})
}

// add_permits: Release without an Acquire raises the count (Semaphore's doc),
// and a waiter takes the permit it adds.
func TestPortTokioSemaphoreAddPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := ctxsync.NewSemaphore(0)
		j := tkSpawn(tkAcquire(s))
		j.pending(t, "Acquire")
		s.Release()
		_, err := j.ready(t, "Acquire")
		require.NoError(t, err)
		require.Equal(t, 0, s.Available())
	})
}

// forget: a permit never released is gone.
func TestPortTokioSemaphoreForget(t *testing.T) {
	s := ctxsync.NewSemaphore(1)
	require.True(t, s.TryAcquire())
	require.Equal(t, 0, s.Available())
	require.Equal(t, 0, s.Available())
	require.False(t, s.TryAcquire())
}

// merge: units taken by two calls go back in one Release.
func TestPortTokioSemaphoreMerge(t *testing.T) {
	w := ctxsync.NewWeighted(3)
	require.True(t, w.TryAcquire(1))
	require.Equal(t, int64(2), w.Available())
	require.True(t, w.TryAcquire(2))
	require.Equal(t, int64(0), w.Available())
	w.Release(3)
	require.Equal(t, int64(3), w.Available())
}

// merge_unrelated_permits: giving one semaphore the permits of another is a
// bug; it panics once it returns more than this one holds.
func TestPortTokioSemaphoreMergeUnrelatedPermits(t *testing.T) {
	w1, w2 := ctxsync.NewWeighted(3), ctxsync.NewWeighted(3)
	require.True(t, w1.TryAcquire(1))
	require.True(t, w2.TryAcquire(1))
	require.PanicsWithValue(t, "ctxsync: Weighted.Release of more than held", func() { w1.Release(2) })
	require.Equal(t, int64(2), w1.Available(), "the refused Release changed the count")
}

func TestPortTokioSemaphoreStressTest(t *testing.T) {
	s := ctxsync.NewSemaphore(5)
	var wg sync.WaitGroup
	for range 1000 {
		wg.Go(func() {
			if err := s.Acquire(context.Background()); err != nil {
				t.Errorf("Acquire = %v, want nil", err)
				return
			}
			s.Release()
		})
	}
	wg.Wait()
	for i := range 5 {
		require.True(t, s.TryAcquire(), "TryAcquire %d of 5", i+1)
	}
	require.False(t, s.TryAcquire(), "a sixth permit")
}

// add_max_amount_permits: a Weighted of capacity 0 grown to the most it
// allows has it all free.
func TestPortTokioSemaphoreAddMaxAmountPermits(t *testing.T) {
	w := ctxsync.NewWeighted(0)
	w.Resize(ctxsync.MaxWeightedCapacity)
	require.Equal(t, int64(ctxsync.MaxWeightedCapacity), w.Available())
	require.True(t, w.TryAcquire(ctxsync.MaxWeightedCapacity))
	w.Release(ctxsync.MaxWeightedCapacity)
}

func TestPortTokioSemaphoreAddMoreThanMaxAmountPermits1(t *testing.T) {
	w := ctxsync.NewWeighted(1)
	require.PanicsWithValue(t, "ctxsync: Weighted.Resize capacity above MaxWeightedCapacity",
		func() { w.Resize(1 + ctxsync.MaxWeightedCapacity) })
	require.Equal(t, int64(1), w.Capacity())
	require.Equal(t, int64(1), w.Available())

	s := ctxsync.NewSemaphore(math.MaxInt64)
	require.PanicsWithValue(t, "ctxsync: Semaphore.Release overflows the count", s.Release)
	require.Equal(t, math.MaxInt64, s.Available(), "the refused Release changed the count")
}

func TestPortTokioSemaphoreAddMoreThanMaxAmountPermits2(t *testing.T) {
	s := ctxsync.NewSemaphore(math.MaxInt64 - 1)
	s.Release()
	require.PanicsWithValue(t, "ctxsync: Semaphore.Release overflows the count", s.Release)
	require.Equal(t, math.MaxInt64, s.Available())
	require.True(t, s.TryAcquire(), "the count after a refused Release")
	require.Equal(t, math.MaxInt64-1, s.Available())
}

func TestPortTokioSemaphorePanicWhenExceedsMaxpermits(t *testing.T) {
	require.PanicsWithValue(t, "ctxsync: NewWeighted capacity above MaxWeightedCapacity",
		func() { ctxsync.NewWeighted(ctxsync.MaxWeightedCapacity + 1) })
	require.PanicsWithValue(t, "ctxsync: NewSemaphore with negative count",
		func() { ctxsync.NewSemaphore(-1) })
}

func TestPortTokioSemaphoreNoPanicAtMaxpermits(t *testing.T) {
	ctxsync.NewWeighted(ctxsync.MaxWeightedCapacity)
	w := ctxsync.NewWeighted(ctxsync.MaxWeightedCapacity - 1)
	w.Resize(ctxsync.MaxWeightedCapacity)
	require.Equal(t, int64(ctxsync.MaxWeightedCapacity), w.Available())
	ctxsync.NewSemaphore(math.MaxInt64)
}

// --- tokio/tests/sync_semaphore_owned.rs

func TestPortTokioSemaphoreOwnedTryAcquireMany(t *testing.T) {
	w := ctxsync.NewWeighted(42)
	require.True(t, w.TryAcquire(42))
	require.False(t, w.TryAcquire(1))
	w.Release(42)
	require.True(t, w.TryAcquire(32))
	require.True(t, w.TryAcquire(10))
	require.False(t, w.TryAcquire(1))
}

func TestPortTokioSemaphoreOwnedAcquireMany(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(42)
		require.True(t, w.TryAcquire(32))
		took10 := make(chan struct{})
		j := tkSpawn(func(ctx context.Context) error {
			if err := w.Acquire(ctx, 10); err != nil {
				return err
			}
			close(took10)
			return w.Acquire(ctx, 32)
		})
		<-took10
		j.pending(t, "Acquire(32) with 10 free")
		w.Release(32)
		_, err := j.ready(t, "Acquire(32)")
		require.NoError(t, err)
		require.Equal(t, int64(0), w.Available())
	})
}

// --- tokio/src/sync/tests/semaphore_batch.rs

func TestPortTokioSemaphoreBatchPollAcquireOneAvailable(t *testing.T) {
	w := ctxsync.NewWeighted(100)
	require.Equal(t, int64(100), w.Available())
	require.NoError(t, w.Acquire(context.Background(), 1))
	require.Equal(t, int64(99), w.Available())
}

func TestPortTokioSemaphoreBatchPollAcquireManyAvailable(t *testing.T) {
	w := ctxsync.NewWeighted(100)
	require.NoError(t, w.Acquire(context.Background(), 5))
	require.Equal(t, int64(95), w.Available())
	require.NoError(t, w.Acquire(context.Background(), 5))
	require.Equal(t, int64(90), w.Available())
}

func TestPortTokioSemaphoreBatchTryAcquireOneAvailable(t *testing.T) {
	w := ctxsync.NewWeighted(100)
	require.True(t, w.TryAcquire(1))
	require.Equal(t, int64(99), w.Available())
	require.True(t, w.TryAcquire(1))
	require.Equal(t, int64(98), w.Available())
}

func TestPortTokioSemaphoreBatchTryAcquireManyAvailable(t *testing.T) {
	w := ctxsync.NewWeighted(100)
	require.True(t, w.TryAcquire(5))
	require.Equal(t, int64(95), w.Available())
	require.True(t, w.TryAcquire(5))
	require.Equal(t, int64(90), w.Available())
}

func TestPortTokioSemaphoreBatchPollAcquireOneUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(1)
		require.NoError(t, w.Acquire(t.Context(), 1))
		require.Equal(t, int64(0), w.Available())
		a2 := tkSpawn(tkAcquireN(w, 1))
		a2.pending(t, "the second Acquire")
		require.Equal(t, int64(0), w.Available())
		w.Release(1)
		_, err := a2.ready(t, "the second Acquire")
		require.NoError(t, err)
		require.Equal(t, int64(0), w.Available())
		w.Release(1)
		require.Equal(t, int64(1), w.Available())
	})
}

// poll_acquire_many_unavailable: the head of the queue is served first, and
// the request behind it waits even when it would fit. Available counts the
// units not yet granted (no partial grants; see the top of the file).
func TestPortTokioSemaphoreBatchPollAcquireManyUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(5)
		require.NoError(t, w.Acquire(t.Context(), 1))
		require.Equal(t, int64(4), w.Available())
		a2 := tkSpawn(tkAcquireN(w, 5))
		a2.pending(t, "Acquire(5)")
		require.Equal(t, int64(4), w.Available(), "tokio: 0, assigned to the waiter")
		a3 := tkSpawn(tkAcquireN(w, 3))
		a3.pending(t, "Acquire(3) behind Acquire(5), 4 units free")
		require.Equal(t, int64(4), w.Available())

		w.Release(1)
		_, err := a2.ready(t, "Acquire(5)")
		require.NoError(t, err)
		a3.pending(t, "Acquire(3), nothing free")
		require.Equal(t, int64(0), w.Available())

		w.Release(1)
		a3.pending(t, "Acquire(3), 1 free")
		require.Equal(t, int64(1), w.Available())

		w.Release(2)
		_, err = a3.ready(t, "Acquire(3)")
		require.NoError(t, err)
		require.Equal(t, int64(0), w.Available())
	})
}

func TestPortTokioSemaphoreBatchTryAcquireOneUnavailable(t *testing.T) {
	w := ctxsync.NewWeighted(1)
	require.True(t, w.TryAcquire(1))
	require.Equal(t, int64(0), w.Available())
	require.False(t, w.TryAcquire(1))
	w.Release(1)
	require.Equal(t, int64(1), w.Available())
	require.True(t, w.TryAcquire(1))
	w.Release(1)
	require.Equal(t, int64(1), w.Available())
}

func TestPortTokioSemaphoreBatchTryAcquireManyUnavailable(t *testing.T) {
	w := ctxsync.NewWeighted(5)
	require.True(t, w.TryAcquire(1))
	require.Equal(t, int64(4), w.Available())
	require.False(t, w.TryAcquire(5))
	w.Release(1)
	require.Equal(t, int64(5), w.Available())
	require.True(t, w.TryAcquire(5))
	w.Release(1)
	require.Equal(t, int64(1), w.Available())
	w.Release(1)
	require.Equal(t, int64(2), w.Available())
}

// poll_acquire_one_zero_permits: the semaphore with no permits is a
// Semaphore; a Weighted of capacity 0 refuses a request of 1 as a bug.
func TestPortTokioSemaphoreBatchPollAcquireOneZeroPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := ctxsync.NewSemaphore(0)
		a := tkSpawn(tkAcquire(s))
		a.pending(t, "Acquire")
		s.Release()
		_, err := a.ready(t, "Acquire")
		require.NoError(t, err)

		require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of more than its capacity",
			func() { _ = ctxsync.NewWeighted(0).Acquire(t.Context(), 1) })
	})
}

func TestPortTokioSemaphoreBatchMaxPermitsDoesntPanic(t *testing.T) {
	ctxsync.NewWeighted(ctxsync.MaxWeightedCapacity)
}

func TestPortTokioSemaphoreBatchValidatesMaxPermits(t *testing.T) {
	require.PanicsWithValue(t, "ctxsync: NewWeighted capacity above MaxWeightedCapacity",
		func() { ctxsync.NewWeighted(ctxsync.MaxWeightedCapacity + 1) })
}

func TestPortTokioSemaphoreBatchTryAcquireValidatesMaxPermits(t *testing.T) {
	w := ctxsync.NewWeighted(0)
	require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of more than its capacity",
		func() { w.TryAcquire(ctxsync.MaxWeightedCapacity + 1) })
}

func TestPortTokioSemaphoreBatchAcquireValidatesMaxPermits(t *testing.T) {
	w := ctxsync.NewWeighted(0)
	require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of more than its capacity",
		func() { _ = w.Acquire(context.Background(), ctxsync.MaxWeightedCapacity+1) })
	require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of more than its capacity",
		func() { _ = w.Acquire(context.Background(), math.MaxInt64) })
}

// acquire_validates_top_bit_permits: the top bit of an int64 is its sign.
func TestPortTokioSemaphoreBatchAcquireValidatesTopBitPermits(t *testing.T) {
	w := ctxsync.NewWeighted(0)
	for _, n := range []int64{math.MinInt64, -1} {
		require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of negative weight",
			func() { _ = w.Acquire(context.Background(), n) }, "Acquire(%d)", n)
		require.PanicsWithValue(t, "ctxsync: Weighted.Acquire of negative weight",
			func() { w.TryAcquire(n) }, "TryAcquire(%d)", n)
	}
	require.Equal(t, int64(0), w.Available())
}

// cancel_acquire_releases_permits: a waiter dropped gives back nothing it did
// not have (tokio: the 6 units assigned to it so far), and the units are
// whole again.
func TestPortTokioSemaphoreBatchCancelAcquireReleasesPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(10)
		require.True(t, w.TryAcquire(4))
		require.Equal(t, int64(6), w.Available())
		a := tkSpawn(tkAcquireN(w, 8))
		a.pending(t, "Acquire(8)")
		require.Equal(t, int64(6), w.Available(), "tokio: 0, assigned to the waiter")
		_, err := a.drop(t, "Acquire(8)")
		require.Equal(t, context.Canceled, err)
		require.Equal(t, int64(6), w.Available())
		require.Equal(t, 0, w.Waiting())
		require.True(t, w.TryAcquire(6))
	})
}

// The head of the queue handing on what it waited for, as tokio's dropped
// waiter hands on its partial grant: a large request at the head holds back
// a small one that fits; once the head gives up, the small one goes in at
// once, with no Release.
func TestPortTokioSemaphoreBatchCancelledHeadHandsOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(10)
		require.True(t, w.TryAcquire(4))
		big := tkSpawn(tkAcquireN(w, 8))
		small := tkSpawn(tkAcquireN(w, 2))
		small.pending(t, "Acquire(2) behind Acquire(8), 6 free")
		require.False(t, w.TryAcquire(1), "TryAcquire overtook the queue")
		_, err := big.drop(t, "Acquire(8)")
		require.Equal(t, context.Canceled, err)
		_, err = small.ready(t, "Acquire(2)")
		require.NoError(t, err)
		require.Equal(t, int64(4), w.Available())
		w.Release(2)
		w.Release(4)
		require.True(t, w.TryAcquire(10), "units lost")
	})
}

// A waiter dropped from the middle of the queue: those before and after it
// keep their order, and nothing is granted to it.
func TestPortTokioSemaphoreBatchDropKeepsFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(4)
		require.True(t, w.TryAcquire(4))
		var order []string
		var mu sync.Mutex
		start := func(name string, n int64) *tkTask[struct{}] {
			return tkSpawn(func(ctx context.Context) error {
				if err := w.Acquire(ctx, n); err != nil {
					return err
				}
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				return nil
			})
		}
		a, b, c, d := start("a", 2), start("b", 3), start("c", 1), start("d", 2)
		_, err := b.drop(t, "b")
		require.Equal(t, context.Canceled, err)
		require.Equal(t, 3, w.Waiting())

		w.Release(3) // a (2) and c (1) fit; d (2) does not
		_, err = a.ready(t, "a")
		require.NoError(t, err)
		_, err = c.ready(t, "c")
		require.NoError(t, err)
		d.pending(t, "d")
		require.ElementsMatch(t, []string{"a", "c"}, order) // granted together, run in any order

		w.Release(1) // the test's last unit: 1 free, d still does not fit
		d.pending(t, "d, 1 free")
		w.Release(2) // a's units
		_, err = d.ready(t, "d")
		require.NoError(t, err)
		require.Equal(t, int64(1), w.Available())
		w.Release(1) // c's
		w.Release(2) // d's
		require.True(t, w.TryAcquire(4), "units lost")
	})
}

// The same with one permit at a time: a Semaphore's dropped waiter takes no
// permit, and the permits go to the others in their order.
func TestPortTokioSemaphoreDropKeepsFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := ctxsync.NewSemaphore(0)
		var got []int
		var mu sync.Mutex
		var tasks []*tkTask[struct{}]
		for i := range 4 {
			tasks = append(tasks, tkSpawn(func(ctx context.Context) error {
				if err := s.Acquire(ctx); err != nil {
					return err
				}
				mu.Lock()
				got = append(got, i)
				mu.Unlock()
				return nil
			}))
		}
		_, err := tasks[1].drop(t, "waiter 1")
		require.Equal(t, context.Canceled, err)
		s.Release()
		s.Release()
		synctest.Wait()
		require.ElementsMatch(t, []int{0, 2}, got) // the two oldest left, run in any order
		tasks[3].pending(t, "waiter 3")
		require.False(t, s.TryAcquire(), "TryAcquire overtook waiter 3")
		s.Release()
		_, err = tasks[3].ready(t, "waiter 3")
		require.NoError(t, err)
		require.Equal(t, 0, s.Available())
		require.Equal(t, 0, s.Waiting())
	})
}

// release_permits_at_drop: the caller's ctx is user code that Acquire runs;
// one that gives back, from its Err or its Done, the permit it holds, lets
// the very Acquire it was given to take it, without a deadlock. (Err is
// looked at before the take; Done only once the take has failed, on the way
// to the queue.)
func TestPortTokioSemaphoreBatchReleasePermitsAtDrop(t *testing.T) {
	for _, on := range []string{"Err", "Done"} {
		t.Run(on, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := ctxsync.NewSemaphore(1)
				w := ctxsync.NewWeighted(1)
				for round := range 2 {
					sctx := &tkReleasingCtx{Context: t.Context(), on: on, release: s.Release}
					require.True(t, s.TryAcquire())
					require.NoError(t, s.Acquire(sctx), "round %d", round)
					require.Equal(t, int32(1), sctx.released.Load())
					require.Equal(t, 0, s.Available())
					s.Release()

					wctx := &tkReleasingCtx{Context: t.Context(), on: on, release: func() { w.Release(1) }}
					require.True(t, w.TryAcquire(1))
					require.NoError(t, w.Acquire(wctx, 1), "round %d", round)
					require.Equal(t, int32(1), wctx.released.Load())
					require.Equal(t, int64(0), w.Available())
					w.Release(1)
				}
				require.Equal(t, 1, s.Available())
				require.Equal(t, int64(1), w.Available())
			})
		})
	}
}

// tkReleasingCtx is a ctx whose first call of the method named on runs
// release: a tokio waker that holds a permit and gives it back when dropped.
type tkReleasingCtx struct {
	context.Context
	on       string
	release  func()
	released atomic.Int32
}

func (c *tkReleasingCtx) once(method string) {
	if method == c.on && c.released.CompareAndSwap(0, 1) {
		c.release()
	}
}

func (c *tkReleasingCtx) Err() error            { c.once("Err"); return c.Context.Err() }
func (c *tkReleasingCtx) Done() <-chan struct{} { c.once("Done"); return c.Context.Done() }

// forget_permits_basic: forgetting permits is shrinking the capacity.
func TestPortTokioSemaphoreBatchForgetPermitsBasic(t *testing.T) {
	w := ctxsync.NewWeighted(10)
	w.Resize(w.Capacity() - 4)
	require.Equal(t, int64(6), w.Available())
	w.Resize(w.Capacity() - min(10, w.Available()))
	require.Equal(t, int64(0), w.Available())
	require.Equal(t, int64(0), w.Capacity())
}

// update_permits_many_times: a request above the capacity of a resized
// Weighted is refused at once, not queued until the capacity grows; grown,
// it is met, and the capacity shrinks back to what is held.
func TestPortTokioSemaphoreBatchUpdatePermitsManyTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(5)
		w.Resize(5)
		require.Equal(t, ctxsync.ErrExceedsCapacity, w.Acquire(t.Context(), 7), "tokio: pending")
		w.Resize(10)
		a := tkSpawn(tkAcquireN(w, 7))
		_, err := a.ready(t, "Acquire(7)")
		require.NoError(t, err)
		require.Equal(t, int64(3), w.Available())
		w.Resize(w.Capacity() - 3)
		require.Equal(t, int64(0), w.Available())
		w.Release(7)
		require.Equal(t, int64(7), w.Available())
	})
}

// A request queued for units that a shrink then makes impossible is refused
// as it waits, and the queue behind it moves on (tokio has no shrink that
// wakes waiters; this is the other side of update_permits_many_times).
func TestPortTokioSemaphoreBatchShrinkRefusesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(10)
		require.True(t, w.TryAcquire(6))
		big := tkSpawn(tkAcquireN(w, 8))
		small := tkSpawn(tkAcquireN(w, 2))
		small.pending(t, "Acquire(2) behind Acquire(8)")
		w.Resize(7) // 1 free of 7
		_, err := big.ready(t, "Acquire(8)")
		require.Equal(t, ctxsync.ErrExceedsCapacity, err)
		small.pending(t, "Acquire(2), 1 free")
		w.Release(6)
		_, err = small.ready(t, "Acquire(2)")
		require.NoError(t, err)
		require.Equal(t, int64(5), w.Available())
		require.Equal(t, 0, w.Waiting())
	})
}

// cancel_acquire_releases_permits, for one permit at a time. DEFECT found by
// the port: a Semaphore whose only waiter gives up (its ctx ends) and is then
// passed over by a Release kept that permit out of reach until the waiter's
// goroutine ran again: Available said 0 and TryAcquire failed, with a permit
// free and nobody waiting (Waiting 0), against TryAcquire's doc ("takes a
// permit if one is free and nobody is waiting"). On a loaded machine that
// goroutine may not run for a long while, and a caller that sheds load with
// TryAcquire turns work away with capacity to spare. Weighted and Lock free
// what they pass over at once. The right behaviour: the permit is free as
// soon as the Release returns.
func TestPortTokioSemaphoreCancelAcquireReleasesPermits(t *testing.T) {
	testutil.OneProcessor(t) // the waiter cannot run between the cancel and the look
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := k.new(1)
				require.True(t, s.TryAcquire())
				a := tkSpawn(s.Acquire)
				a.pending(t, "Acquire")
				a.cancel()  // the waiter gives up; it has not run since
				s.Release() // after its ctx ended: not its permit
				require.Equal(t, 0, s.Waiting())
				require.Equal(t, 1, s.Available(), "a permit free, nobody waiting")
				require.True(t, s.TryAcquire(), "a permit free, nobody waiting")
				_, err := a.ready(t, "Acquire")
				require.Equal(t, context.Canceled, err)
				require.Equal(t, 0, s.Available(), "the waiter's leaving added a permit")
				require.False(t, s.TryAcquire())
				s.Release()
				require.Equal(t, 1, s.Available())
			})
		})
	}
}

// The same with a live waiter behind the one that gave up: the permit goes
// to it, and the count stays right once the first has left.
func TestPortTokioSemaphoreCancelAcquirePassesOn(t *testing.T) {
	testutil.OneProcessor(t)
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := k.new(1)
				require.True(t, s.TryAcquire())
				a := tkSpawn(s.Acquire)
				b := tkSpawn(s.Acquire)
				c := tkSpawn(s.Acquire)
				a.cancel()
				s.Release() // passes a over, to b
				require.Equal(t, 0, s.Available())
				require.False(t, s.TryAcquire(), "TryAcquire overtook c")
				_, err := a.ready(t, "a")
				require.Equal(t, context.Canceled, err)
				_, err = b.ready(t, "b")
				require.NoError(t, err)
				c.pending(t, "c")
				require.Equal(t, 1, s.Waiting())
				s.Release() // b's
				_, err = c.ready(t, "c")
				require.NoError(t, err)
				s.Release() // c's
				require.Equal(t, 1, s.Available())
				require.Equal(t, 0, s.Waiting())
			})
		})
	}
}

// A request of 0 units with nobody queued, after a Resize below the units
// held: it waits until the units held are back within the capacity, as
// every request does while Available is negative (Acquire's and Resize's
// docs), and TryAcquire(0) fails meanwhile. tokio has no shrink below the
// permits held; its acquire of 0 goes through at once.
func TestPortTokioSemaphoreBatchAcquireZeroAfterShrink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(2)
		require.True(t, w.TryAcquire(2))
		w.Resize(1) // Available -1, nobody queued
		require.False(t, w.TryAcquire(0), "TryAcquire(0) with Available negative")
		a := tkSpawn(tkAcquireN(w, 0))
		a.pending(t, "Acquire(0) with Available negative")
		w.Release(1) // Available 0: back within the capacity
		_, err := a.ready(t, "Acquire(0) once back within the capacity")
		require.NoError(t, err)
		w.Release(1)
		require.Equal(t, int64(1), w.Available())
	})
}
