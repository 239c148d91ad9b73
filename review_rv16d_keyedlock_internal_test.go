package ctxsync

import (
	"context"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// trickCtx is a ctx whose methods do what the caller's code may: Err panics,
// or calls runtime.Goexit, at its nth call; Done panics; or Err calls back
// into the KeyedLock.
type trickCtx struct {
	context.Context
	mode  int // 0: Err panics; 1: Err calls Goexit; 2: Done panics; 3: Err calls back
	nth   int
	calls int
	back  func()
}

func (c *trickCtx) Err() error {
	c.calls++
	if c.calls == c.nth {
		switch c.mode {
		case 0:
			panic("trickCtx: Err")
		case 1:
			runtime.Goexit()
		}
	}
	if c.mode == 3 {
		c.back()
	}
	return c.Context.Err()
}

func (c *trickCtx) Done() <-chan struct{} {
	if c.mode == 2 {
		panic("trickCtx: Done")
	}
	return c.Context.Done()
}

// keyedAtRest checks that k keeps nothing for any key: no key counted, none
// in a slot or a map, the resident entries unused, and the free entries
// without references.
func keyedAtRest[K comparable](t *testing.T, k *KeyedLock[K]) {
	t.Helper()
	require.Zero(t, k.Len())
	for i := range k.shards {
		sh := &k.shards[i]
		sh.mu.Lock()
		require.Zero(t, sh.n, "shard %d", i)
		require.False(t, sh.ownUsed, "shard %d", i)
		require.Zero(t, sh.own.refs, "shard %d", i)
		for j := range sh.ents {
			require.Nil(t, sh.ents[j], "shard %d slot %d", i, j)
		}
		require.Empty(t, sh.m, "shard %d", i)
		require.LessOrEqual(t, sh.nfree, keyedFreeMax)
		n := 0
		for e := sh.free; e != nil; e = e.next {
			require.Zero(t, e.refs, "a free entry of shard %d", i)
			require.False(t, e.l.Locked(), "a free entry of shard %d", i)
			n++
		}
		require.Equal(t, sh.nfree, n)
		sh.mu.Unlock()
	}
}

// rv16dCtx returns a ctx that never ends, one cancelled after a random
// moment, or one with a random timeout.
func rv16dCtx(r *rand.Rand) (context.Context, context.CancelFunc) {
	d := time.Duration(r.IntN(200)) * time.Microsecond
	switch r.IntN(3) {
	case 0:
		return context.WithCancel(context.Background())
	case 1:
		return context.WithTimeout(context.Background(), d)
	default:
		ctx, cancel := context.WithCancel(context.Background())
		t := time.AfterFunc(d, cancel)
		return ctx, func() { t.Stop(); cancel() }
	}
}

// TestHammerKeyedLockCtxTricks: goroutines lock keys, in correct use, with
// ctxs that end at random moments, or whose methods panic, call
// runtime.Goexit, or call back into the KeyedLock (a TryLock and Unlock of
// the key being locked or of another, and Len); and TryLock and unlock. No two goroutines ever hold
// one key (an entry reused for another key while in use would let them, or
// make an Unlock panic); a Lock that does not return nil holds nothing; and
// at rest the KeyedLock keeps nothing: Len is zero and every shard is empty.
func TestHammerKeyedLockCtxTricks(t *testing.T) { hammerKeyedLockCtxTricks(t, false) }

// TestHammerKeyedLockCtxTricksMisused is TestHammerKeyedLockCtxTricks with
// a goroutine that now and then unlocks a key it does not hold: then no two
// goroutines' holds are told apart, and an Unlock may panic, with
// KeyedLock's message only; Lock panics with nothing but what its ctx
// panics with; Len never goes below zero; and at rest the KeyedLock keeps
// nothing.
func TestHammerKeyedLockCtxTricksMisused(t *testing.T) { hammerKeyedLockCtxTricks(t, true) }

func hammerKeyedLockCtxTricks(t *testing.T, misuse bool) {
	const workers, keys = 6, 40 // over the slots of a few shards: maps too
	rounds := 400
	var k KeyedLock[int]
	var holders [keys]atomic.Int32
	unlock := func(key int) {
		if !misuse {
			k.Unlock(key)
			return
		}
		if p := testutil.PanicOf(func() { k.Unlock(key) }); p != nil && p != keyedUnlocked {
			t.Errorf("Unlock panicked with %v", p)
		}
	}
	hold := func(key int) {
		if n := holders[key].Add(1); n != 1 && !misuse {
			t.Errorf("key %d held %d times", key, n)
		}
		if r := rand.IntN(4); r == 0 {
			runtime.Gosched()
		}
		holders[key].Add(-1)
		unlock(key)
	}
	var wg sync.WaitGroup
	var stop atomic.Bool
	if misuse {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(99, 0xd16))
			for !stop.Load() {
				unlock(r.IntN(3))
				if k.Len() < 0 {
					t.Errorf("Len %d", k.Len())
				}
				for range r.IntN(100) {
					runtime.Gosched()
				}
			}
		})
	}
	var workersWG sync.WaitGroup
	for i := range workers {
		workersWG.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 0xd16))
			for range rounds {
				// Mostly a few hot keys, for waiters; now and then any.
				key := r.IntN(3)
				if r.IntN(4) == 0 {
					key = r.IntN(keys)
				}
				switch r.IntN(6) {
				case 0:
					if k.TryLock(key) {
						hold(key)
					}
				case 1, 2:
					ctx, cancel := rv16dCtx(r)
					if k.Lock(ctx, key) == nil {
						hold(key)
					}
					cancel()
				default:
					base, cancel := rv16dCtx(r)
					other := (key + 1 + r.IntN(keys-1)) % keys
					if r.IntN(2) == 0 {
						other = key // a TryLock of the very key being locked
					}
					c := &trickCtx{Context: base, mode: r.IntN(4), nth: 1 + r.IntN(3)}
					c.back = func() {
						if k.TryLock(other) {
							holders[other].Add(1)
							holders[other].Add(-1)
							unlock(other)
						}
						_ = k.Len()
					}
					var err error
					finished := false
					done := make(chan struct{})
					go func() {
						defer close(done)
						defer func() {
							if p := recover(); p != nil && p != "trickCtx: Err" && p != "trickCtx: Done" {
								t.Errorf("Lock panicked with %v", p)
							}
						}()
						err = k.Lock(c, key)
						finished = true
					}()
					<-done
					cancel()
					if finished && err == nil {
						hold(key)
					}
				}
			}
		})
	}
	workersWG.Wait()
	stop.Store(true)
	wg.Wait()
	keyedAtRest(t, &k)
	for key := range keys {
		require.True(t, k.TryLock(key))
		k.Unlock(key)
	}
	keyedAtRest(t, &k)
}

// TestKeyedLockManyKeysMemoryBack: a burst of keys, many with waiters, then
// all let go: the shards keep no key, no map, and no more than their few
// spare entries, each with a Lock of no waiter nodes beyond a small ring.
func TestKeyedLockManyKeysMemoryBack(t *testing.T) {
	var k KeyedLock[int]
	const keys = 2000
	bg := context.Background()
	for key := range keys {
		require.NoError(t, k.Lock(bg, key))
	}
	var wg sync.WaitGroup
	for key := 0; key < keys; key += 7 {
		for range 1 + key%6 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(bg, time.Millisecond)
				defer cancel()
				if key%3 == 0 {
					ctx = bg // waits until the key is unlocked
				}
				if k.Lock(ctx, key) == nil {
					k.Unlock(key)
				}
			})
		}
	}
	for key := 0; key < keys; key += 7 {
		for key%3 == 0 && k.waitingFor(key) < 1+key%6 {
			runtime.Gosched()
		}
	}
	require.Equal(t, keys, k.Len())
	for key := range keys {
		k.Unlock(key)
	}
	wg.Wait()
	keyedAtRest(t, &k)
	for i := range k.shards {
		sh := &k.shards[i]
		require.Nil(t, sh.m, "shard %d keeps its map", i)
		for e := sh.free; e != nil; e = e.next {
			require.Zero(t, e.l.q.Len())
		}
	}
}

// TestKeyedLockPeakCountsGoroutines: an entry's peak counts the goroutines
// that held, waited for or were on their way to its lock at once, as
// keyedWaitersKept is measured in: a key held with three goroutines waiting
// peaks at 4, and its entry is reused with its Lock, whose queue keeps its
// ring (the waiters' nodes are dropped all the same); with four waiting it
// peaks at 5 and gets a new Lock.
//
// What was wrong: a Lock that waits holds a second reference of its own,
// and an Unlock that hands over holds one while it does, and the peak
// counted those: three waiters made 6, four made 8, so that an entry whose
// key had three waiters got a new Lock, and TestKeyedLockFewWaitersPerKey
// GiveMemoryBack, meant for an entry kept with its Lock, no longer tested one.
func TestKeyedLockPeakCountsGoroutines(t *testing.T) {
	for _, waiters := range []int{1, 2, 3, 4} {
		var k KeyedLock[int]
		bg := context.Background()
		require.NoError(t, k.Lock(bg, 1))
		done := make(chan struct{})
		for range waiters {
			go func() {
				if k.Lock(bg, 1) == nil {
					k.Unlock(1)
				}
				done <- struct{}{}
			}()
		}
		for k.waitingFor(1) < waiters {
			runtime.Gosched()
		}
		sh, h := k.shard(1, "test")
		sh.mu.Lock()
		e := sh.findLocked(1, h)
		peak := e.peak
		sh.mu.Unlock()
		require.Equal(t, 1+waiters, peak, "holder and %d waiters", waiters)
		k.Unlock(1)
		for range waiters {
			<-done
		}
		keyedAtRest(t, &k)
		sh.mu.Lock()
		kept := reflect.ValueOf(&e.l.q.List).Elem().FieldByName("free").Len() > 0
		sh.mu.Unlock()
		require.Equal(t, 1+waiters <= keyedWaitersKept, kept, "the Lock of an entry whose key had %d goroutines at once is kept", 1+waiters)
	}
}
