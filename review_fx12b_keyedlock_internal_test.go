package ctxsync

import (
	"context"
	"reflect"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
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
