package ctxsync_test

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestKeyedLockZeroValue(t *testing.T) {
	var k ctxsync.KeyedLock[string]
	require.Equal(t, 0, k.Len())
	require.PanicsWithValue(t, "ctxsync: Unlock of unlocked KeyedLock key", func() { k.Unlock("a") })
	require.NoError(t, k.Lock(context.Background(), "a"))
	require.Equal(t, 1, k.Len())
	k.Unlock("a")
	require.Equal(t, 0, k.Len())
}

// TestKeyedLockKeys: equal keys exclude each other, others do not; a key's
// lock goes when its last user leaves. Keys at the extremes of their type
// are keys like any other.
func TestKeyedLockKeys(t *testing.T) {
	var k ctxsync.KeyedLock[int]
	keys := []int{0, 1, -1, math.MaxInt, math.MinInt}
	for i, key := range keys {
		require.NoError(t, k.Lock(context.Background(), key))
		require.Equal(t, i+1, k.Len())
	}
	for _, key := range keys {
		require.False(t, k.TryLock(key), "TryLock(%d) of a held key", key)
	}
	for i, key := range keys {
		k.Unlock(key)
		require.PanicsWithValue(t, "ctxsync: Unlock of unlocked KeyedLock key", func() { k.Unlock(key) })
		require.Equal(t, len(keys)-i-1, k.Len())
	}
	for _, key := range keys {
		require.True(t, k.TryLock(key))
		k.Unlock(key)
	}
	require.Equal(t, 0, k.Len())
}

// TestKeyedLockManyKeysAtOnce: more keys held at once than a shard holds in
// place (the rest go to its map), then all let go: nothing is left.
func TestKeyedLockManyKeysAtOnce(t *testing.T) {
	var k ctxsync.KeyedLock[string]
	const n = 5000
	for i := range n {
		require.True(t, k.TryLock(strconv.Itoa(i)))
	}
	require.Equal(t, n, k.Len())
	for i := range n {
		require.False(t, k.TryLock(strconv.Itoa(i)))
	}
	for i := n - 1; i >= 0; i-- {
		if i%2 == 0 {
			k.Unlock(strconv.Itoa(i))
		}
	}
	require.Equal(t, n/2, k.Len())
	for i := range n {
		if i%2 == 1 {
			k.Unlock(strconv.Itoa(i))
		} else {
			require.True(t, k.TryLock(strconv.Itoa(i)))
			k.Unlock(strconv.Itoa(i))
		}
	}
	require.Equal(t, 0, k.Len())
}

// TestKeyedLockMemoryFollowsKeys: a million distinct keys locked and
// unlocked in turn leave no key and the heap where it began (the hand-written
// map of mutexes keeps one per key ever seen: kubernetes#66442). So does a
// burst of keys held at once: the room their maps took is given back.
func TestKeyedLockMemoryFollowsKeys(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	var k ctxsync.KeyedLock[string]
	require.True(t, k.TryLock("warm-up"))
	k.Unlock("warm-up")
	before := heapBytesAfterGC()
	for i := range n {
		key := "user-" + strconv.Itoa(i)
		if err := k.Lock(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		k.Unlock(key)
	}
	require.Equal(t, 0, k.Len())
	require.InDelta(t, before, heapBytesAfterGC(), 256<<10, "heap in use, in bytes, before and after %d keys in turn", n)
	require.Equal(t, 0, k.Len())

	keys := make([]string, 100_000)
	for i := range keys {
		keys[i] = "burst-" + strconv.Itoa(i)
	}
	before = heapBytesAfterGC()
	for _, key := range keys {
		require.True(t, k.TryLock(key))
	}
	held := heapBytesAfterGC()
	for _, key := range keys {
		k.Unlock(key)
	}
	require.Equal(t, 0, k.Len())
	after := heapBytesAfterGC()
	t.Logf("heap: %.0f KiB before, %.0f KiB with %d keys held, %.0f KiB after", before/1024, held/1024, len(keys), after/1024)
	require.InDelta(t, before, after, 256<<10, "heap in use, in bytes, before and after a burst of %d keys", len(keys))
	runtime.KeepAlive(keys)
	runtime.KeepAlive(&k) // measured with k alive, not collected whole
}

// TestKeyedLockBurstGivesMemoryBack pins a leak of the shards' maps: after a
// burst of a few thousand keys held at once and then all released, each
// shard kept the map its overflow keys had grown (a Go map never shrinks,
// and the map was rebuilt smaller only from 64 keys a shard, down to a
// quarter of that, then kept): 37 to 93 KiB for good, where the doc promises
// memory that follows the keys in use. What may stay is bounded whatever the
// burst: the few unused entries each shard keeps for reuse (16 KiB in all).
func TestKeyedLockBurstGivesMemoryBack(t *testing.T) {
	for _, n := range []int{500, 1000, 2000, 4000} {
		t.Run("keys="+strconv.Itoa(n), func(t *testing.T) {
			keys := make([]string, n)
			for i := range keys {
				keys[i] = "burst-" + strconv.Itoa(i)
			}
			var k ctxsync.KeyedLock[string]
			require.True(t, k.TryLock("warm-up"))
			k.Unlock("warm-up")
			before := heapBytesAfterGC()
			for round := range 2 {
				for _, key := range keys {
					require.True(t, k.TryLock(key))
				}
				for _, key := range keys {
					k.Unlock(key)
				}
				require.Equal(t, 0, k.Len())
				after := heapBytesAfterGC()
				t.Logf("round %d: %.1f KiB more than before the burst", round, (after-before)/1024)
				require.Less(t, after-before, float64(24<<10), "heap in use grew by this many bytes after a burst of %d keys, all released", n)
			}
			runtime.KeepAlive(keys)
			runtime.KeepAlive(&k)
		})
	}
}

// TestKeyedLockSteadyUseAllocatesNothing: memory given back after a burst
// must not cost the steady case: a shard that goes a few keys past its slots
// and back, over and over, keeps its small map and its free entries, and a
// key locked and unlocked allocates nothing.
func TestKeyedLockSteadyUseAllocatesNothing(t *testing.T) {
	var k ctxsync.KeyedLock[string]
	ctx := context.Background()
	held := make([]string, 200) // about 6 a shard: some shards use their map
	for i := range held {
		held[i] = "held-" + strconv.Itoa(i)
		require.True(t, k.TryLock(held[i]))
	}
	turn := make([]string, 64)
	for i := range turn {
		turn[i] = "turn-" + strconv.Itoa(i)
	}
	lockInTurn := func() {
		for _, key := range turn {
			if err := k.Lock(ctx, key); err != nil {
				t.Fatal(err)
			}
			k.Unlock(key)
		}
	}
	lockInTurn() // fills the free lists
	require.Zero(t, testing.AllocsPerRun(100, lockInTurn), "allocations per %d keys locked and unlocked in turn", len(turn))
	// The same with the held keys let go and taken again, four at a time
	// (no more than a shard keeps free entries for): the maps empty and fill
	// again within their first group.
	batches := func() {
		for i := 0; i < len(held); i += 4 {
			for _, key := range held[i : i+4] {
				k.Unlock(key)
			}
			for _, key := range held[i : i+4] {
				if !k.TryLock(key) {
					t.Fatalf("TryLock(%q) = false, want true", key)
				}
			}
		}
	}
	batches()
	require.Zero(t, testing.AllocsPerRun(100, batches), "allocations per %d keys released and taken again, four at a time", len(held))
	for _, key := range held {
		k.Unlock(key)
	}
	require.Equal(t, 0, k.Len())
}

// TestKeyedLockWaiterBurstGivesMemoryBack pins a leak of the waiters of a
// key: a key's lock keeps the nodes of its waiters, and the ring that holds
// them, for its next waiters, and a KeyedLock kept the lock of a key released
// for the next key, its waiters' nodes with it: after 2,000 goroutines had
// waited for one key, about 370 KiB stayed for good, where the doc promises
// memory that follows the keys in use. The right behaviour: once the key is
// released, the heap is back where it began, give or take the few entries
// kept for reuse.
func TestKeyedLockWaiterBurstGivesMemoryBack(t *testing.T) {
	const n = 2000
	burst := func(k *ctxsync.KeyedLock[string]) {
		synctest.Test(t, func(t *testing.T) {
			require.True(t, k.TryLock("hot"))
			for range n {
				go func() {
					if err := k.Lock(context.Background(), "hot"); err != nil {
						t.Error(err)
						return
					}
					k.Unlock("hot")
				}()
			}
			synctest.Wait() // every goroutine waits for the key
			k.Unlock("hot")
		})
	}
	// A first burst elsewhere leaves the runtime's own free lists (of
	// goroutines) as large as the measured burst needs.
	var warm ctxsync.KeyedLock[string]
	burst(&warm)
	var k ctxsync.KeyedLock[string]
	require.True(t, k.TryLock("warm-up"))
	k.Unlock("warm-up")
	before := heapBytesAfterGC()
	burst(&k)
	require.Equal(t, 0, k.Len())
	after := heapBytesAfterGC()
	t.Logf("%.1f KiB more than before %d goroutines waited for a key", (after-before)/1024, n)
	require.Less(t, after-before, float64(64<<10), "heap in use grew by this many bytes after %d goroutines waited for one key, now released", n)
	runtime.KeepAlive(&k)
	runtime.KeepAlive(&warm)
}

// TestKeyedLockBadKeys: a key that does not equal itself (a NaN) would never
// be found again and panics; a key that cannot be hashed panics as a map
// does. Neither leaves anything behind, nor a shard locked.
func TestKeyedLockBadKeys(t *testing.T) {
	var f ctxsync.KeyedLock[float64]
	const nan = "ctxsync: KeyedLock key not equal to itself (a NaN?)"
	require.PanicsWithValue(t, nan, func() { _ = f.Lock(context.Background(), math.NaN()) })
	require.PanicsWithValue(t, nan, func() { f.TryLock(math.NaN()) })
	require.PanicsWithValue(t, "ctxsync: Unlock of unlocked KeyedLock key", func() { f.Unlock(math.NaN()) })
	require.Equal(t, 0, f.Len())
	for _, key := range []float64{0, math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64} {
		require.True(t, f.TryLock(key), "TryLock(%v)", key)
		f.Unlock(key)
	}

	var a ctxsync.KeyedLock[any]
	require.Panics(t, func() { _ = a.Lock(context.Background(), []int{1}) })
	require.Panics(t, func() { a.TryLock(map[int]int{}) })
	require.Equal(t, 0, a.Len())
	for i := range 100 { // every shard is still usable
		require.NoError(t, a.Lock(context.Background(), i))
		a.Unlock(i)
	}
}

func TestKeyedLockNilCtx(t *testing.T) {
	var k ctxsync.KeyedLock[string]
	//lint:ignore SA1012 a nil ctx is what is tested
	require.PanicsWithValue(t, "ctxsync: nil Context", func() { _ = k.Lock(nil, "a") }) //nolint:staticcheck
	require.Equal(t, 0, k.Len())
	require.True(t, k.TryLock("a"))
	k.Unlock("a")
}

// TestKeyedLockDoneCtx: a done ctx fails Lock even when the key is free, and
// leaves nothing; while it looks at its ctx, the key is free for others.
func TestKeyedLockDoneCtx(t *testing.T) {
	for _, c := range doneCtxCases(t) {
		t.Run(c.name, func(t *testing.T) {
			var k ctxsync.KeyedLock[string]
			require.Equal(t, c.want, k.Lock(c.ctx, "a"), "free key")
			require.Equal(t, 0, k.Len())
			require.NoError(t, k.Lock(context.Background(), "a"))
			require.Equal(t, c.want, k.Lock(c.ctx, "a"), "held key")
			require.Equal(t, 1, k.Len())
			k.Unlock("a")
			require.Equal(t, 0, k.Len())
		})
	}
	var k ctxsync.KeyedLock[string]
	for _, p := range []takeFree{keyedTakeFree(&k, "a")} {
		t.Run("changes nothing", func(t *testing.T) {
			wasTaken := false
			ctx := probeCtx{testutil.Cancelled(), func() { wasTaken = wasTaken || !p.free() }}
			require.Equal(t, context.Canceled, p.take(ctx))
			require.False(t, wasTaken, "taken, for a moment, by a call whose ctx was done")
			require.True(t, p.free())
		})
	}
	require.Equal(t, 0, k.Len())
}

// keyedTakeFree is key of k as the tests of donectx_test.go see a primitive.
// free calls back into k from the ctx's Err, as a Context of the caller's
// may: no lock of k is held meanwhile.
func keyedTakeFree(k *ctxsync.KeyedLock[string], key string) takeFree {
	return takeFree{
		name: "KeyedLock",
		hold: func(ctx context.Context) error { return k.Lock(ctx, key) },
		give: func() { k.Unlock(key) },
		take: func(ctx context.Context) error { return k.Lock(ctx, key) },
		free: func() bool {
			if k.TryLock(key) {
				k.Unlock(key)
				return true
			}
			return false
		},
	}
}

// TestKeyedLockFreedAfterCtxCheck: the caller looked at its ctx, alive; then
// its ctx ended and the key was freed (or taken and freed again) before it
// took it. It must not take it.
func TestKeyedLockFreedAfterCtxCheck(t *testing.T) {
	var k ctxsync.KeyedLock[string]
	p := keyedTakeFree(&k, "a")
	t.Run("freed", func(t *testing.T) {
		require.NoError(t, p.hold(context.Background()))
		inner, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx := &hookCtx{Context: inner, hook: func() { cancel(); p.give() }}
		require.Equal(t, context.Canceled, p.take(ctx), "got what was freed after its ctx ended")
		require.True(t, p.free())
	})
	t.Run("taken and freed", func(t *testing.T) {
		inner, cancel := context.WithCancel(context.Background())
		defer cancel()
		ctx := &hookCtx{Context: inner, hook: func() {
			cancel()
			require.NoError(t, p.hold(context.Background()))
			p.give()
		}}
		require.Equal(t, context.Canceled, p.take(ctx), "got what was freed after its ctx ended")
		require.True(t, p.free())
	})
	require.Equal(t, 0, k.Len())
}

// TestKeyedLockFIFO: waiters on a key are served in the order they came; a
// TryLock does not overtake them; other keys are not held up meanwhile.
func TestKeyedLockFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var k ctxsync.KeyedLock[string]
		require.NoError(t, k.Lock(t.Context(), "a"))
		var order []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				require.NoError(t, k.Lock(t.Context(), "a"))
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				k.Unlock("a")
			})
			synctest.Wait() // queued in this order
		}
		require.False(t, k.TryLock("a"), "TryLock overtook the waiters")
		for i := range 100 { // other keys, some in a's shard
			key := "b" + strconv.Itoa(i)
			require.True(t, k.TryLock(key), "TryLock(%s) held up by another key", key)
			k.Unlock(key)
		}
		require.Equal(t, 1, k.Len())
		k.Unlock("a")
		wg.Wait()
		require.Equal(t, []int{0, 1, 2, 3, 4}, order)
		require.Equal(t, 0, k.Len())
	})
}

// TestKeyedLockGiveUp: a waiter whose ctx ends leaves the key's queue; the
// key goes when its holder unlocks.
func TestKeyedLockGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var k ctxsync.KeyedLock[string]
		require.NoError(t, k.Lock(t.Context(), "a"))
		ctx, cancel := context.WithCancel(t.Context())
		res := make(chan error, 1)
		go func() { res <- k.Lock(ctx, "a") }()
		synctest.Wait()
		require.Equal(t, 1, k.Len(), "a key held and waited for is one key")
		cancel()
		require.Equal(t, context.Canceled, <-res)
		require.Equal(t, 1, k.Len())
		k.Unlock("a")
		require.Equal(t, 0, k.Len())
	})
}

// TestKeyedLockGrantRace: the key is handed to a waiter whose ctx ended a
// moment before: it fails and passes the lock on to the one behind it.
func TestKeyedLockGrantRace(t *testing.T) {
	var k ctxsync.KeyedLock[string]
	lock := func(ctx context.Context) error { return k.Lock(ctx, "a") }
	errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
		require.NoError(t, k.Lock(t.Context(), "a"))
		return grantRace{first: lock, second: lock, grant: func() { k.Unlock("a") }}
	})
	require.Equal(t, context.Canceled, errA)
	require.NoError(t, errB, "the lock was passed on")
	k.Unlock("a")
	require.Equal(t, 0, k.Len())
}

func TestKeyedLockCancelledWaiterNotGranted(t *testing.T) {
	var k *ctxsync.KeyedLock[string]
	cancelThenFree(t, 2000, func() (func(context.Context) error, func(), func()) {
		k = new(ctxsync.KeyedLock[string])
		require.NoError(t, k.Lock(context.Background(), "a"))
		return func(ctx context.Context) error { return k.Lock(ctx, "a") }, func() { k.Unlock("a") }, func() {
			require.True(t, k.TryLock("a"))
			k.Unlock("a")
			require.Equal(t, 0, k.Len())
		}
	})
}

func TestKeyedLockCancelRaces(t *testing.T) {
	var k *ctxsync.KeyedLock[string]
	runCancelRaces(t, 300, func(t *testing.T) cancelRace {
		k = new(ctxsync.KeyedLock[string])
		require.NoError(t, k.Lock(context.Background(), "a"))
		lock := func(ctx context.Context) error { return k.Lock(ctx, "a") }
		unlock := func() { k.Unlock("a") }
		return cancelRace{
			grantRace:     grantRace{first: lock, second: lock, grant: unlock},
			releaseFirst:  unlock,
			releaseSecond: unlock,
			check:         func(t *testing.T) { require.Equal(t, 0, k.Len()) },
		}
	})
}

func keyedHandover(k *ctxsync.KeyedLock[string]) handover {
	lock := func(ctx context.Context) error { return k.Lock(ctx, "a") }
	unlock := func() { k.Unlock("a") }
	return handover{name: "KeyedLock", take: lock, wait: lock, give: unlock, after: unlock}
}

// TestKeyedLockAcrossBubbles: a KeyedLock made outside any bubble is used in
// one, then outside, then in another; one made in a bubble keeps working
// after it.
func TestKeyedLockAcrossBubbles(t *testing.T) {
	var k ctxsync.KeyedLock[string]
	h := keyedHandover(&k)
	synctest.Test(t, func(t *testing.T) { h.run(t) })
	h.run(t)
	synctest.Test(t, func(t *testing.T) { h.run(t) })
	require.Equal(t, 0, k.Len())

	var made *ctxsync.KeyedLock[string]
	synctest.Test(t, func(t *testing.T) {
		made = new(ctxsync.KeyedLock[string])
		keyedHandover(made).run(t)
	})
	keyedHandover(made).run(t)
	require.Equal(t, 0, made.Len())
}

// TestHammerKeyedLock: goroutines lock a few keys with random deadlines and
// cancellations, some with TryLock. Never two holders of a key; at the end
// no key is left and every key is free.
func TestHammerKeyedLock(t *testing.T) {
	const keys = 6
	var (
		k      ctxsync.KeyedLock[int]
		inside [keys]atomic.Int32
		counts [keys]int // guarded by the key's lock: the race detector checks the hand-offs
		wins   [keys]atomic.Int64
		wg     sync.WaitGroup
	)
	rounds := testutil.HammerRounds(200)
	for g := range 32 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 2))
			for range rounds {
				key := r.IntN(keys)
				ctx, cancel := randomCtx(r)
				err := tryOrWait(ctx, r,
					func() bool { return k.TryLock(key) },
					func(ctx context.Context) error { return k.Lock(ctx, key) })
				if err == nil {
					if n := inside[key].Add(1); n != 1 {
						t.Errorf("%d goroutines hold key %d", n, key)
					}
					counts[key]++
					wins[key].Add(1)
					if r.IntN(4) == 0 {
						runtime.Gosched()
					}
					inside[key].Add(-1)
					k.Unlock(key)
				} else if err != context.Canceled && err != context.DeadlineExceeded {
					t.Errorf("Lock = %v, want nil or a ctx error", err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 0, k.Len(), "keys left")
	for key := range keys {
		require.Equal(t, wins[key].Load(), int64(counts[key]))
		require.True(t, k.TryLock(key))
		k.Unlock(key)
	}
}
