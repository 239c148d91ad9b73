package ctxsync_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestHammerLockMisusedUnlocks: goroutines lock with random cancellation and
// unlock, while another now and then unlocks the Lock without holding it.
// Such an Unlock cannot be told from the holder's while the Lock is held:
// the misuse shows later, as an Unlock that finds the Lock unlocked, and
// that is the only place it may show. Lock never panics (a waiter handed the
// Lock as its ctx ends gives back only its own hold), nothing hangs, and
// once every goroutine has unlocked what it was given, the Lock is free with
// nobody queued.
func TestHammerLockMisusedUnlocks(t *testing.T) {
	const workers = 8
	rounds := testutil.HammerRounds(300)
	var l ctxsync.Lock
	var wg sync.WaitGroup
	unlock := func() {
		if p := testutil.PanicOf(l.Unlock); p != nil {
			assert.Equal(t, "ctxsync: Unlock of unlocked Lock", p)
		}
	}
	for i := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 16))
			for range rounds {
				ctx, cancel := randomCtx(r)
				var err error
				if p := testutil.PanicOf(func() { err = l.Lock(ctx) }); p != nil {
					assert.Fail(t, "Lock panicked", "%v", p)
				}
				cancel()
				if err == nil {
					unlock()
				}
			}
		})
	}
	wg.Go(func() {
		r := rand.New(rand.NewPCG(99, 16))
		for range rounds / 4 {
			unlock()
			for range r.IntN(64) {
				if l.TryLock() {
					unlock() // its hold may be let go by another's misuse, too
				}
			}
		}
	})
	wg.Wait()
	require.Zero(t, l.Waiting())
	require.False(t, l.Locked(), "every hold was let go once")
	require.True(t, l.TryLock())
	l.Unlock()
}

// TestHammerKeyedLockMisusedUnlocks is TestHammerLockMisusedUnlocks for a
// KeyedLock over a few keys: Lock never panics, an Unlock that panics does
// so with KeyedLock's message, Len never goes below zero, and in the end no
// key is held or kept.
func TestHammerKeyedLockMisusedUnlocks(t *testing.T) {
	const workers, keys = 8, 3
	rounds := testutil.HammerRounds(300)
	var k ctxsync.KeyedLock[int]
	var wg sync.WaitGroup
	unlock := func(key int) {
		if p := testutil.PanicOf(func() { k.Unlock(key) }); p != nil {
			assert.Equal(t, "ctxsync: Unlock of unlocked KeyedLock key", p)
		}
	}
	for i := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 17))
			for range rounds {
				key := r.IntN(keys)
				ctx, cancel := randomCtx(r)
				var err error
				if p := testutil.PanicOf(func() { err = k.Lock(ctx, key) }); p != nil {
					assert.Fail(t, "Lock panicked", "%v", p)
				}
				cancel()
				assert.GreaterOrEqual(t, k.Len(), 0)
				if err == nil {
					unlock(key)
				}
			}
		})
	}
	wg.Go(func() {
		r := rand.New(rand.NewPCG(99, 17))
		for range rounds / 4 {
			unlock(r.IntN(keys))
			for range r.IntN(64) {
				if key := r.IntN(keys); k.TryLock(key) {
					unlock(key)
				}
			}
		}
	})
	wg.Wait()
	require.Zero(t, k.Len())
	for key := range keys {
		require.True(t, k.TryLock(key))
		k.Unlock(key)
	}
	require.Zero(t, k.Len())
}
