package ctxsync

import (
	"context"
	"hash/maphash"
	"sync"

	"github.com/ctxsync/ctxsync/internal/keycheck"
	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

const (
	// keyedShards is how many shards a KeyedLock spreads its keys over. Keys
	// in different shards never share a lock.
	keyedShards = 32

	// keyedSlots is how many keys a shard holds in place before it needs a
	// map. A Go map costs several cache lines and, under churn, an insert and
	// a delete with a reseed per key; most shards hold a key or two at a time,
	// and a slot is found by comparing hashes that sit in the shard's line.
	keyedSlots = 4

	// keyedFreeMax is how many unused entries a shard keeps for reuse, so
	// that a key locked and unlocked in turn allocates nothing, and memory
	// still follows the keys in use.
	keyedFreeMax = 4

	// keyedMapSmall is the most keys a shard's map may have held for it to
	// be kept as it is, however few keys it holds now: a map that never held
	// more than this is one group of slots, a few hundred bytes, and keeping
	// it lets a shard that goes a few keys past its slots and back, over and
	// over, allocate nothing. A map that held more is rebuilt smaller once it
	// holds less than a quarter of its peak, and dropped once empty: Go maps
	// never give back the room of deleted keys, so a burst of keys would
	// otherwise keep its memory for good.
	keyedMapSmall = 8

	// keyedWaitersKept is the most goroutines an entry's lock may have had
	// at once for the entry to be reused with that lock. A Lock keeps the
	// ring that holds its waiters' free nodes, sized for the most waiters it
	// had: an entry whose key had a burst of waiters gets a new Lock when it
	// is dropped, or it would keep the burst's ring for the next key, for
	// good. A small ring is kept, so that a key waited for now and then
	// reuses it. (The nodes themselves are dropped whenever an entry goes:
	// see releaseLocked.)
	keyedWaitersKept = 4

	keyedUnlocked = "ctxsync: Unlock of unlocked KeyedLock key"
	keyedNaN      = "ctxsync: KeyedLock key not equal to itself (a NaN?)"
)

// keyedSeed hashes keys to shards. It is made once for the process: a seed is
// plain data, shared by every bubble without harm.
var keyedSeed = maphash.MakeSeed()

// A KeyedLock is a Lock per key: Lock(ctx, key) and Unlock(key) exclude one
// another for equal keys only. The lock of a key exists only while a goroutine
// holds it or waits for it, so memory follows the keys in use, not every key
// ever seen. Each key's lock is a Lock, with all its rules: waiters on a key
// are served first in, first out, a TryLock never overtakes them, and a
// waiter can give up when its ctx ends. Like Lock it is not reentrant: a
// goroutine that holds a key and locks it again waits for itself.
//
// The zero KeyedLock has no key locked and is ready to use. A KeyedLock must
// not be copied after first use. A KeyedLock is safe for concurrent use by
// multiple goroutines.
//
// Keys are spread over shards, each with its own small mutex held only to find
// or drop a key's lock, never while anyone waits: one key's holders and
// waiters do not slow another key's, beyond the rare moment two keys of a
// shard are looked up at once. The shards take about 12 KiB for string keys,
// and keep up to 21 KiB of unused key locks for reuse, whatever the number
// of keys held now or before: make one KeyedLock per kind of resource, not
// one per request.
//
// A key must equal itself: a float NaN (or a struct or interface holding one)
// would never be found again, and Lock and TryLock panic for it. A key of an
// interface type that holds a value that cannot be hashed (a slice, a map, a
// func) panics in every method, with a message naming the package and the
// method; a struct key with such a value in an interface field panics as a
// map index would. Every such panic comes before any lock is taken, and
// leaves the KeyedLock as it was.
//
// In the terminology of the Go memory model, the n'th call to Unlock(k) is
// synchronized before the m'th successful call to Lock or TryLock of a key
// equal to k, for any n < m, as for Lock.
type KeyedLock[K comparable] struct {
	_ nocopy.NoCopy

	shards [keyedShards]keyedShard[K]
}

// A keyedShard holds the locks of the keys that hash to it: up to keyedSlots
// in place, the rest in a map.
type keyedShard[K comparable] struct {
	mu sync.Mutex

	// own is the shard's resident entry, used by one key at a time when
	// ownUsed is false, so that the lock of a shard's first key shares the
	// cache lines of the shard's mutex: under churn across processors, an
	// entry of the free list was last written by another processor, and
	// fetching its line costs as much as the rest of the call.
	own     keyedEntry
	ownUsed bool // guarded by mu

	// A slot i is in use when ents[i] is not nil; hashes[i] is then the hash
	// of keys[i], compared before the key. All guarded by mu.
	hashes [keyedSlots]uint64
	ents   [keyedSlots]*keyedEntry
	keys   [keyedSlots]K

	// m holds the keys beyond the slots; peak is the most keys it held since
	// it was made. grown is set once m, or a map it was rebuilt from, held
	// more than keyedMapSmall keys: such a map is dropped once empty, since
	// a map rebuilt smaller after a burst can hold few keys and would stay
	// for good. All guarded by mu.
	m     map[K]*keyedEntry
	peak  int
	grown bool

	n     int         // guarded by mu: the keys held or waited for
	free  *keyedEntry // guarded by mu: unused entries, for reuse
	nfree int         // guarded by mu

	// A cache line of padding keeps the fields above off the line of the
	// next shard's mutex, which goroutines on other keys write.
	_ [64]byte
}

// A keyedEntry is the lock of one key.
type keyedEntry struct {
	// refs counts the goroutines that hold l, wait for it or are on their
	// way to wait for it. The entry stays in its shard while refs is above
	// zero, and is reused only once it is zero: nobody touches it then. It
	// comes first, to share a cache line with l's state word.
	refs int         // guarded by the shard's mu
	next *keyedEntry // guarded by the shard's mu: the next free entry
	peak int         // guarded by the shard's mu: the most goroutines at once since the entry was last dropped
	l    Lock

	// extra counts the references of calls at work on l beyond their
	// goroutines' own: the second reference of a Lock that waits, and the
	// one an Unlock holds while it hands over (see Lock and Unlock). refs
	// less extra is the number of goroutines, which peak is measured in
	// (see keyedWaitersKept). Guarded by the shard's mu.
	extra int
}

// shard returns the shard of key and the key's hash. what names the method
// called, for the panic of a key that cannot be compared (see keycheck).
func (k *KeyedLock[K]) shard(key K, what string) (*keyedShard[K], uint64) {
	h := keycheck.Hash(keyedSeed, key, what)
	return &k.shards[h%keyedShards], h
}

// Lock locks key, waiting if needed until it is unlocked, after the goroutines
// already waiting for that key, or until ctx is done. Other keys' locks do not
// delay it.
//
// On failure it returns ctx.Err() and nothing is locked: a ctx that is already
// done fails even when key is free. If the key's lock is handed over at the
// same moment that ctx ends, Lock either returns nil holding it or passes it
// on to the next waiter and returns ctx.Err(); it is never lost.
//
// Lock panics if ctx is nil, and if key does not equal itself (a float NaN)
// or, for an interface key type, holds a value that cannot be compared (a
// slice, a map, a func).
func (k *KeyedLock[K]) Lock(ctx context.Context, key K) error {
	if ctx == nil {
		waitq.PanicNilCtx("ctxsync")
	}
	sh, h := k.shard(key, "ctxsync: KeyedLock.Lock")
	sh.mu.Lock()
	e := sh.findLocked(key, h)
	if e == nil {
		if e = sh.addLocked(key, h); e == nil {
			sh.mu.Unlock()
			panic(keyedNaN)
		}
	}
	e.refs++
	e.peak = max(e.peak, e.refs-e.extra)
	sh.mu.Unlock()

	// The key's Lock looks at ctx, outside the shard's mutex (a Context is
	// the caller's code), and follows every rule of a Lock: a done ctx
	// fails; a lock freed after ctx ended is not taken; a hand-over that
	// races the end of ctx is kept or passed on. If it fails, or a method
	// of ctx panics, the reference goes, and with the last one the entry.
	//
	// Its fast path is Lock's, here so that the slow path can be told
	// apart: on it, the call holds a second reference, its own. The first
	// becomes the hold's once the key's lock is taken or handed over, and
	// an Unlock by a goroutine that does not hold the key may let that
	// hold go, and drop its reference, while the call is still at work in
	// the key's lock: the entry must stay until the call is done with it.
	// If the hold it had was let go so, the call drops no reference for it,
	// whether it returns or a method of ctx panics.
	refs := 1
	extra := false // the call holds its second reference: it counts in e.extra
	gone := false
	defer func() {
		if gone {
			refs = 1 // the other was the hold's, and was dropped with it
		}
		if refs > 0 {
			sh.mu.Lock()
			if extra {
				e.extra--
			}
			for ; refs > 0; refs-- {
				sh.releaseLocked(key, h, e)
			}
			sh.mu.Unlock()
		}
	}()
	s := e.l.state.Load()
	if err := ctx.Err(); err != nil {
		return err
	}
	if s&(lockHeld|lockWaiters) == 0 && e.l.state.CompareAndSwap(s, s+lockTake+lockHeld) {
		refs = 0 // the hold's
		return nil
	}
	sh.mu.Lock()
	e.refs++
	e.extra++
	refs++
	extra = true
	sh.mu.Unlock()
	err := e.l.lockSlowGone(ctx, &gone)
	if err == nil {
		refs = 1 // the call's: the other is the hold's
	}
	return err
}

// TryLock locks key if it is free and nobody waits for it, and reports whether
// it did. It never waits. It panics on a key that Lock panics on.
func (k *KeyedLock[K]) TryLock(key K) bool {
	sh, h := k.shard(key, "ctxsync: KeyedLock.TryLock")
	sh.mu.Lock()
	e := sh.findLocked(key, h)
	if e == nil {
		if e = sh.addLocked(key, h); e == nil {
			sh.mu.Unlock()
			panic(keyedNaN)
		}
	}
	ok := e.l.TryLock() // fails only on a key held or waited for: e has refs, and stays
	if ok {
		e.refs++
	}
	sh.mu.Unlock()
	return ok
}

// Unlock unlocks key. If goroutines wait for it, the oldest one now holds it;
// if none does, the key's lock is dropped.
//
// Unlock panics if key is not locked, or cannot be compared (see Lock). As
// with Lock, the goroutine that unlocks a key need not be the one that locked
// it; so, as for Lock, an Unlock by a goroutine that does not hold the key,
// made while another does, unlocks it, and the misuse shows later, as an
// Unlock that finds the key unlocked and panics with "ctxsync: Unlock of
// unlocked KeyedLock key".
func (k *KeyedLock[K]) Unlock(key K) {
	sh, h := k.shard(key, "ctxsync: KeyedLock.Unlock")
	sh.mu.Lock()
	e := sh.findLocked(key, h)
	if e == nil || !e.l.Locked() {
		sh.mu.Unlock()
		panic(keyedUnlocked)
	}
	if e.refs == 1 {
		// Nobody else holds a reference, so nobody waits: unlocking l
		// takes its fast path, and the entry goes.
		e.l.Unlock()
		sh.releaseLocked(key, h, e)
		sh.mu.Unlock()
		return
	}
	// Hand over outside the shard's mutex, so that waking the next holder
	// never delays the shard's other keys. A reference of the call's own
	// keeps e until then: the hold's may be no reference of ours, if we do
	// not hold the key (another Unlock racing this one, made by a goroutine
	// that does not hold it either, may find the key locked as we did, and
	// let the hold go first). e must not be dropped, and reused for another
	// key, while we unlock its lock.
	e.refs++
	e.extra++
	sh.mu.Unlock()
	ok := e.l.unlockOrFalse()
	sh.mu.Lock()
	e.extra--
	sh.releaseLocked(key, h, e)
	if !ok {
		// Another Unlock let the hold go since we looked: ours finds the
		// key unlocked, and drops only the call's reference.
		sh.mu.Unlock()
		panic(keyedUnlocked)
	}
	sh.releaseLocked(key, h, e)
	sh.mu.Unlock()
}

// Len returns the number of keys held or waited for at the moment of the
// call. For metrics and tests; it may be stale by the time the caller looks at
// it.
func (k *KeyedLock[K]) Len() int {
	n := 0
	for i := range k.shards {
		sh := &k.shards[i]
		sh.mu.Lock()
		n += sh.n
		sh.mu.Unlock()
	}
	return n
}

// findLocked returns the entry of key, whose hash is h, or nil. sh.mu must be
// held.
func (sh *keyedShard[K]) findLocked(key K, h uint64) *keyedEntry {
	for i := range sh.ents {
		if sh.hashes[i] == h && sh.ents[i] != nil && sh.keys[i] == key {
			return sh.ents[i]
		}
	}
	if sh.m == nil {
		return nil
	}
	return sh.m[key]
}

// addLocked makes an entry for key, whose hash is h, with no references, and
// returns it; or nil, changing nothing, if key does not equal itself: a NaN is
// never found again, so its lock could never be unlocked. sh.mu must be held.
func (sh *keyedShard[K]) addLocked(key K, h uint64) *keyedEntry {
	if key != key {
		return nil
	}
	var e *keyedEntry
	switch {
	case !sh.ownUsed:
		e, sh.ownUsed = &sh.own, true
	case sh.free != nil:
		e = sh.free
		sh.free, e.next = e.next, nil
		sh.nfree--
	default:
		e = new(keyedEntry)
	}
	sh.n++
	for i := range sh.ents {
		if sh.ents[i] == nil {
			sh.hashes[i], sh.ents[i], sh.keys[i] = h, e, key
			return e
		}
	}
	if sh.m == nil {
		sh.m = make(map[K]*keyedEntry)
	}
	sh.m[key] = e
	if n := len(sh.m); n > sh.peak {
		sh.peak = n
		sh.grown = sh.grown || n > keyedMapSmall
	}
	return e
}

// releaseLocked drops one reference to e, the entry of key, whose hash is h,
// and drops the entry once nobody refers to it. sh.mu must be held.
func (sh *keyedShard[K]) releaseLocked(key K, h uint64, e *keyedEntry) {
	if e.refs--; e.refs > 0 {
		return
	}
	sh.n--
	// Nobody refers to e: no goroutine holds l, waits for it or is still to
	// return from a call on it. The nodes its waiters left are dropped
	// either way: l's queue would make its next waiter a fresh node anyway
	// (it reuses nodes only while busy), so kept they would only hold
	// memory, for as long as e sits unused. The shard's mutex, under which
	// each of those goroutines dropped its reference, orders their writes
	// to l before these. A lock that had no waiter since e was last dropped
	// has no node: its queue's cache line is not touched.
	switch {
	case e.peak > keyedWaitersKept:
		e.l = Lock{}
	case e.peak > 1:
		e.l.q.Forget()
	}
	e.peak = 0
	if e == &sh.own {
		sh.ownUsed = false
	} else if sh.nfree < keyedFreeMax {
		e.next, sh.free = sh.free, e
		sh.nfree++
	}
	for i := range sh.ents {
		if sh.ents[i] == e {
			var zero K
			sh.hashes[i], sh.ents[i], sh.keys[i] = 0, nil, zero // let the key go
			return
		}
	}
	delete(sh.m, key)
	switch n := len(sh.m); {
	case n == 0 && sh.grown:
		sh.m, sh.peak, sh.grown = nil, 0, false
	case sh.peak > keyedMapSmall && n < sh.peak/4:
		sh.shrinkLocked()
	}
}

// shrinkLocked moves the keys of sh's map into a map sized for them, and lets
// the old one go. Rebuilding when the map holds a quarter of its peak costs at
// most a copy of each key per three deleted: constant time per Unlock,
// amortized.
func (sh *keyedShard[K]) shrinkLocked() {
	m := make(map[K]*keyedEntry, len(sh.m))
	for key, e := range sh.m {
		m[key] = e
	}
	sh.m, sh.peak = m, len(m)
}
