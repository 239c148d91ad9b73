package ctxsync

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// inLockQueue counts the goroutines blocked on the lock of a Lock's queue in
// fn, a function of lock.go, by their stacks.
func inLockQueue(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "ctxsync.(*Lock)."+fn) && strings.Contains(g, "sync.(*Mutex).Lock") {
			n++
		}
	}
	return n
}

// TestKeyedLockRacingMisusedUnlocksPanicWithItsMessage: a key is held, with a
// goroutine waiting for it, and three Unlocks of it race: the holder's and
// two by goroutines that do not hold it. All three find the key locked (two
// holds: the holder's, and the waiter's once it is handed over), and go on to
// unlock its lock out of the shard's mutex. (They are held at the lock of the
// key's queue until all three have looked.) One of them finds the key's lock
// unlocked.
//
// What was wrong: it panicked with the message of a Lock, "ctxsync: Unlock
// of unlocked Lock", and had dropped nothing, yet the others dropped more
// references than there were. What is right: it panics with KeyedLock's own
// message, and the key's entry goes once nobody refers to it; the KeyedLock
// works on.
func TestKeyedLockRacingMisusedUnlocksPanicWithItsMessage(t *testing.T) {
	var k KeyedLock[string]
	require.NoError(t, k.Lock(context.Background(), "a"))
	waiter := make(chan error)
	go func() { waiter <- k.Lock(context.Background(), "a") }()
	for k.waitingFor("a") != 1 {
		runtime.Gosched()
	}

	sh, h := k.shard("a", "test")
	sh.mu.Lock()
	e := sh.findLocked("a", h)
	sh.mu.Unlock()
	e.l.q.Lock()
	panics := make(chan any, 3)
	for range 3 {
		go func() { panics <- testutil.PanicOf(func() { k.Unlock("a") }) }()
	}
	for inLockQueue("unlockSlow")+inLockQueue("unlockOrFalse") < 3 {
		runtime.Gosched()
	}
	e.l.q.Unlock()

	var got []any
	for range 3 {
		if p := <-panics; p != nil {
			got = append(got, p)
		}
	}
	require.NoError(t, <-waiter) // handed the key, which another Unlock let go
	require.Equal(t, []any{keyedUnlocked}, got)
	require.Zero(t, k.Len())
	require.True(t, k.TryLock("a"))
	k.Unlock("a")
	require.Zero(t, k.Len())
}

// waitingFor returns how many goroutines wait for key's lock.
func (k *KeyedLock[K]) waitingFor(key K) int {
	sh, h := k.shard(key, "test")
	sh.mu.Lock()
	e := sh.findLocked(key, h)
	sh.mu.Unlock()
	if e == nil {
		return 0
	}
	return e.l.Waiting()
}

// TestKeyedLockMisusedUnlockFromCtxKeepsReferences: a Lock of a key held by
// another finds, at its first look at ctx, the key unlocked by its holder
// (from within ctx.Err, the caller's code), takes it by itself, and at its
// second look finds it unlocked again, by an Unlock of a goroutine that does
// not hold it, and its ctx ended. The hold it took is gone: it gives back
// nothing.
//
// What was wrong: the misused Unlock dropped the reference of that hold, the
// last one, and the entry went, while the Lock went on using its lock; then
// the Lock, failing, dropped its reference again: the shard counted -1 keys
// (Len returned -1), and the entry could be handed out twice. What is right:
// the Lock holds a reference of its own while it waits, and drops none for a
// hold that another Unlock let go; the entry goes once, and Len is 0.
func TestKeyedLockMisusedUnlockFromCtxKeepsReferences(t *testing.T) {
	var k KeyedLock[string]
	require.True(t, k.TryLock("a"))
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	c := &hookCtx{Context: ctx, err: func() {
		switch calls++; calls {
		case 1: // the key's Lock loaded its state, held: the holder unlocks
			k.Unlock("a")
		case 2: // the key's lock was taken by lockSlow: the misused Unlock
			k.Unlock("a")
			cancel()
		}
	}}
	var err error
	pv := testutil.PanicOf(func() { err = k.Lock(c, "a") })
	require.Nil(t, pv)
	require.Equal(t, 2, calls)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, k.Len())
	require.True(t, k.TryLock("a"))
	require.True(t, k.TryLock("b"))
	require.Equal(t, 2, k.Len())
	k.Unlock("a")
	k.Unlock("b")
	require.Zero(t, k.Len())
}

// TestKeyedLockMisusedUnlockFromPanickingCtx is
// TestKeyedLockMisusedUnlockFromCtxKeepsReferences with a ctx whose Err,
// after the misused Unlock, panics instead of returning an error. What was
// wrong: the Lock, leaving by the panic, dropped its references as if it had
// given back a hold, one too many: Len returned -1. What is right: the panic
// goes on to the caller, and the entry goes once.
func TestKeyedLockMisusedUnlockFromPanickingCtx(t *testing.T) {
	var k KeyedLock[string]
	require.True(t, k.TryLock("a"))
	calls := 0
	c := &hookCtx{Context: context.Background(), err: func() {
		switch calls++; calls {
		case 1:
			k.Unlock("a")
		case 2:
			k.Unlock("a") // the misused Unlock
			panic("ctx panics")
		}
	}}
	require.Equal(t, "ctx panics", testutil.PanicOf(func() { _ = k.Lock(c, "a") }))
	require.Equal(t, 2, calls)
	require.Zero(t, k.Len())
	require.True(t, k.TryLock("a"))
	require.Equal(t, 1, k.Len())
	k.Unlock("a")
	require.Zero(t, k.Len())
}
