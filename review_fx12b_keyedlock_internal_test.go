package ctxsync

import (
	"context"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/keycheck"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// keptWaiterNodes returns how many waiter nodes the entries that k keeps for
// reuse (each shard's own and its free ones) still hold, and how many
// entries it keeps. The count of a lock's free nodes is read by reflection:
// it is waitq's.
func keptWaiterNodes(k *KeyedLock[string]) (nodes, entries int) {
	count := func(e *keyedEntry) {
		entries++
		nodes += int(reflect.ValueOf(&e.l.q.List).Elem().FieldByName("nfree").Int())
	}
	for i := range k.shards {
		sh := &k.shards[i]
		sh.mu.Lock()
		count(&sh.own)
		for e := sh.free; e != nil; e = e.next {
			count(e)
		}
		sh.mu.Unlock()
	}
	return nodes, entries
}

// TestKeyedLockFewWaitersPerKeyGiveMemoryBack pins a leak next to the one
// TestKeyedLockWaiterBurstGivesMemoryBack fixed: an entry whose lock had up
// to 4 goroutines at once (keyedWaitersKept) kept that lock for reuse, and
// the lock kept the nodes of its waiters, each with its channel. Those nodes
// are never reused by the entry's next key: a lock's queue drops its free
// nodes at the first wait after it was quiet (see waitq's node reuse), so
// they only sat there. After a burst of keys, each held with three
// goroutines waiting, the 160 entries kept held 480 nodes: the heap stayed
// 100 to 140 KiB above where it began, for good, where the KeyedLock's doc
// promised at most 16 KiB of unused key locks kept, whatever the keys held
// before. The right behaviour: an entry kept for reuse holds no waiter's
// node. (Counted, not weighed: the heap after a bubble of 3,000 goroutines
// varies by 20 KiB from run to run.)
func TestKeyedLockFewWaitersPerKeyGiveMemoryBack(t *testing.T) {
	const keys, waiters = 1000, 3 // refs peak at 4: within keyedWaitersKept
	var k KeyedLock[string]
	synctest.Test(t, func(t *testing.T) {
		for i := range keys {
			key := "key-" + strconv.Itoa(i)
			require.True(t, k.TryLock(key))
			for range waiters {
				go func() {
					if err := k.Lock(context.Background(), key); err != nil {
						t.Error(err)
						return
					}
					k.Unlock(key)
				}()
			}
		}
		synctest.Wait() // every goroutine waits for its key
		for i := range keys {
			k.Unlock("key-" + strconv.Itoa(i))
		}
		synctest.Wait()
	})
	require.Equal(t, 0, k.Len())
	nodes, entries := keptWaiterNodes(&k)
	require.Equal(t, keyedShards*(1+keyedFreeMax), entries, "entries kept for reuse")
	require.Zero(t, nodes, "waiter nodes held by the %d entries kept for reuse, after %d keys each had %d waiters", entries, keys, waiters)
	runtime.KeepAlive(&k)
}

// sameShardKeys returns n int keys that hash to one shard of a KeyedLock.
func sameShardKeys(n int) []int {
	var keys []int
	for key := 0; len(keys) < n; key++ {
		if keycheck.Hash(keyedSeed, key, "")%keyedShards == 0 {
			keys = append(keys, key)
		}
	}
	return keys
}

// TestHammerKeyedLockOneShard: goroutines lock keys of one shard, some many
// at once (so that the shard's map grows past keyedMapSmall, then is rebuilt
// smaller and dropped as they go), many on one key (so that its lock is made
// anew when the key goes), with random cancellations. Whatever the map and
// the locks go through: never two holders of a key, nobody stranded, and at
// the end the shard empty and whole.
func TestHammerKeyedLockOneShard(t *testing.T) {
	keys := sameShardKeys(40)
	var (
		k      KeyedLock[int]
		inside = make([]atomic.Int32, len(keys))
		wg     sync.WaitGroup
	)
	rounds := testutil.HammerRounds(150)
	hold := func(i int) {
		if n := inside[i].Add(1); n != 1 {
			t.Errorf("%d goroutines hold key %d", n, keys[i])
		}
	}
	release := func(i int) {
		inside[i].Add(-1)
		k.Unlock(keys[i])
	}
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 12))
			for range rounds {
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(3) == 0 {
					stop := time.AfterFunc(time.Duration(r.IntN(100))*time.Microsecond, cancel)
					defer stop.Stop()
				}
				switch r.IntN(4) {
				case 0: // a burst: many keys at once, in order (no deadlock)
					lo := r.IntN(len(keys))
					hi := lo + r.IntN(len(keys)-lo)
					var held []int
					for i := lo; i < hi; i++ {
						if k.Lock(ctx, keys[i]) != nil {
							break
						}
						hold(i)
						held = append(held, i)
					}
					runtime.Gosched()
					for _, i := range held {
						release(i)
					}
				case 1: // the hot key, waited for by many
					if k.Lock(ctx, keys[0]) == nil {
						hold(0)
						runtime.Gosched()
						release(0)
					}
				case 2:
					if i := r.IntN(len(keys)); k.TryLock(keys[i]) {
						hold(i)
						release(i)
					}
				default:
					if i := r.IntN(len(keys)); k.Lock(ctx, keys[i]) == nil {
						hold(i)
						release(i)
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 0, k.Len(), "keys left")
	sh := &k.shards[0]
	sh.mu.Lock()
	require.Zero(t, sh.n)
	require.False(t, sh.ownUsed)
	require.Zero(t, len(sh.m))
	require.LessOrEqual(t, sh.nfree, keyedFreeMax)
	for i := range sh.ents {
		require.Nil(t, sh.ents[i])
	}
	sh.mu.Unlock()
	for _, key := range keys {
		require.True(t, k.TryLock(key))
		k.Unlock(key)
	}
}

// TestKeyedLockFIFOWhileTheMapIsRebuilt: the waiters of a key kept in the
// shard's map are served in the order they came, while other keys of the
// shard come and go around them, so that the map is rebuilt smaller and its
// key moved, and the key's lock passed over more waiters than an entry keeps
// its lock for.
func TestKeyedLockFIFOWhileTheMapIsRebuilt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		keys := sameShardKeys(30)
		var k KeyedLock[int]
		for _, key := range keys[:4] { // the slots: the rest goes in the map
			require.True(t, k.TryLock(key))
		}
		hot := keys[4]
		require.True(t, k.TryLock(hot))
		var order []int
		for w := range 2 * keyedWaitersKept {
			go func() {
				require.NoError(t, k.Lock(context.Background(), hot))
				order = append(order, w) // guarded by hot's lock
				k.Unlock(hot)
			}()
			synctest.Wait() // w waits: the next comes after it
			// Grow the map past keyedMapSmall and shrink it below a quarter
			// of its peak: it is rebuilt with hot in it.
			for _, key := range keys[5:] {
				require.True(t, k.TryLock(key))
			}
			for _, key := range keys[5:] {
				k.Unlock(key)
			}
		}
		k.Unlock(hot)
		synctest.Wait()
		want := make([]int, 2*keyedWaitersKept)
		for i := range want {
			want[i] = i
		}
		require.Equal(t, want, order)
		for _, key := range keys[:4] {
			k.Unlock(key)
		}
		require.Equal(t, 0, k.Len())
	})
}

// TestKeyedLockMapRebuiltSmallerWhileKeysStay pins the half of the map fix
// that no test covered: a shard's map that grew in a burst is rebuilt
// smaller once it holds less than a quarter of its peak, even while some of
// its keys stay held (it is dropped only once empty). With the rebuild
// removed, every other KeyedLock test passed, and a burst of 4,000 keys of
// which 8 a shard stay held kept about 100 KiB of map for good. Here the
// heap with the burst's survivors held is compared with the heap with the
// same keys held and no burst before: the maps of the first must be no
// larger than the second's, give or take.
func TestKeyedLockMapRebuiltSmallerWhileKeysStay(t *testing.T) {
	const burst, stay = 4000, 8 // stay: the slots and a few in the map
	perShard := make(map[uint64]int)
	var kept, rest []string
	for i := range burst {
		key := "burst-" + strconv.Itoa(i)
		if s := keycheck.Hash(keyedSeed, key, "") % keyedShards; perShard[s] < stay {
			perShard[s]++
			kept = append(kept, key)
		} else {
			rest = append(rest, key)
		}
	}
	require.Len(t, perShard, keyedShards)
	held := func(burst bool) float64 {
		k := new(KeyedLock[string])
		before := heapBytesAfterGC()
		for _, key := range kept {
			require.True(t, k.TryLock(key))
		}
		if burst {
			for _, key := range rest {
				require.True(t, k.TryLock(key))
			}
			for _, key := range rest {
				k.Unlock(key)
			}
		}
		after := heapBytesAfterGC()
		require.Equal(t, len(kept), k.Len())
		runtime.KeepAlive(k)
		return after - before
	}
	plain := held(false)
	after := held(true)
	t.Logf("%d keys held: %.1f KiB; the same after a burst of %d: %.1f KiB", len(kept), plain/1024, burst, after/1024)
	require.Less(t, after-plain, float64(24<<10), "heap in use with %d keys held after a burst of %d keys, beyond that of the same keys held alone", len(kept), burst)
	runtime.KeepAlive(kept)
	runtime.KeepAlive(rest)
}

func heapBytesAfterGC() float64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc)
}
