package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/keycheck"
	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// KeyedConfig tunes a Keyed. The zero value means the defaults.
type KeyedConfig struct {
	// TTL is how long a key may go unused before it may be evicted; 0 means
	// 10 minutes. An evicted key starts over with a new limiter, so make it
	// longer than the limiter takes to recover fully (burst/rate for a token
	// bucket, the window for a window), or clients that pause for longer
	// than the TTL get a fresh allowance early. A key with goroutines in its
	// WaitN is in use, however long they wait, and is never evicted.
	TTL time.Duration

	// MaxKeys caps the number of keys; 0 means 100 000. When a new key would
	// exceed it, the least recently used of a sample of keys is evicted even
	// if it is not idle (as many of the sample as it takes to bring the
	// shard back to its cap), so that rotating keys cannot exhaust memory.
	// The cap is split between the shards, each of which evicts on its own,
	// so a new key may evict another of its shard while other shards have
	// room. Keys with goroutines in their WaitN are spared, so the cap may be
	// passed by as many keys as there are goroutines waiting.
	MaxKeys int
}

const (
	keyedShards     = 64 // the most shards; a power of two
	keyedSample     = 8  // keys looked at per eviction
	defaultKeyedTTL = 10 * time.Minute
	defaultMaxKeys  = 100_000
)

// A Keyed holds one limiter per key (per user, per API key, per client
// address), made on first use by the constructor it was given.
//
// Keys live in shards with a lock each, so that callers with different keys
// rarely contend. A key unused for the TTL may be evicted when new keys
// arrive, and the number of keys is capped; see KeyedConfig.
//
// Every method that takes a key panics if the key does not equal itself (a
// float NaN, which a map could never find again) or, for an interface key
// type, holds a value that cannot be compared (a slice, a map, a func).
//
// Use NewKeyed; the zero Keyed is not usable: its methods panic. A Keyed must
// not be copied after first use. It is safe for concurrent use by multiple
// goroutines.
type Keyed[K comparable, L Limiter] struct {
	_        nocopy.NoCopy
	newLimit func(K) L
	ttl      int64
	mask     uint64 // the number of shards in use, minus one
	seed     maphash.Seed
	shards   [keyedShards]keyedShard[K, L]
}

type keyedShard[K comparable, L Limiter] struct {
	mu      sync.RWMutex
	entries map[K]*keyedEntry[L] // guarded by mu
	max     int                  // the shard's part of MaxKeys, at least 1
	_       [64]byte             // keep shards on separate cache lines
}

type keyedEntry[L Limiter] struct {
	lim      L
	ns       nsLimiter    // lim, if it is of this package; or nil
	lastUsed atomic.Int64 // on the package's clock
	waiting  atomic.Int32 // goroutines in the key's WaitN: the key is in use
}

// Validate reports what is wrong with c, if anything: a negative TTL or
// MaxKeys. NewKeyed panics with the same complaint; a program that reads a
// KeyedConfig from outside (a file, flags) can call Validate first.
func (c KeyedConfig) Validate() error {
	if c.TTL < 0 || c.MaxKeys < 0 {
		return fmt.Errorf("ratelimit: NewKeyed with negative option: %+v", c)
	}
	return nil
}

// NewKeyed returns a Keyed that makes the limiter of a key with newLimiter,
// on first use of the key:
//
//	perUser := ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket {
//		return ratelimit.NewTokenBucket(10, 20)
//	}, ratelimit.KeyedConfig{})
//
// newLimiter runs without any lock of the Keyed held; it may run more than
// once for a key that several goroutines use first at the same moment, one
// result being kept.
//
// NewKeyed panics if newLimiter is nil or opts is not valid (see
// KeyedConfig.Validate). A call that
// makes a key panics if newLimiter returns nil, and passes on newLimiter's
// own panics; the Keyed is left as it was.
func NewKeyed[K comparable, L Limiter](newLimiter func(key K) L, opts KeyedConfig) *Keyed[K, L] {
	if newLimiter == nil {
		panic("ratelimit: NewKeyed with nil newLimiter")
	}
	if err := opts.Validate(); err != nil {
		panic(err.Error())
	}
	if opts.TTL == 0 {
		opts.TTL = defaultKeyedTTL
	}
	if opts.MaxKeys == 0 {
		opts.MaxKeys = defaultMaxKeys
	}
	// Fewer keys than shards get fewer shards, so that each may hold one
	// key and the shards' caps still add up to MaxKeys.
	n := keyedShards
	for n > opts.MaxKeys {
		n /= 2
	}
	k := &Keyed[K, L]{
		newLimit: newLimiter,
		ttl:      int64(opts.TTL),
		mask:     uint64(n - 1),
		seed:     maphash.MakeSeed(),
	}
	for i := range n {
		s := &k.shards[i]
		s.entries = make(map[K]*keyedEntry[L])
		s.max = opts.MaxKeys / n
		if i < opts.MaxKeys%n {
			s.max++
		}
	}
	return k
}

// Get returns the limiter of key, making it if need be. The key may be evicted
// once unused for the TTL (see KeyedConfig): a caller that keeps the limiter
// longer may hold one that the Keyed has since replaced.
func (k *Keyed[K, L]) Get(key K) L {
	e, _ := k.entry(key, false, "ratelimit: Keyed.Get")
	return e.lim
}

// entry returns the entry of key, made if need be and marked used now, and the
// time it read. A limiter of this package decides at that same time: one
// clock read per call in all. The entry is marked used, and if wait the
// caller counted among its waiters, before the shard's lock is released, so
// that no eviction of idle keys can come between finding the entry and
// using it: the events the caller takes would be lost with it, and the key's
// next limiter would start full. what names the method called, for the
// panic of a key that cannot be compared (see keycheck).
func (k *Keyed[K, L]) entry(key K, wait bool, what string) (*keyedEntry[L], int64) {
	k.check()
	now := nowNs()
	s := &k.shards[keycheck.Hash(k.seed, key, what)&k.mask]
	s.mu.RLock()
	e := s.entries[key]
	if e != nil {
		e.use(now, wait)
	}
	s.mu.RUnlock()
	if e == nil {
		e = k.insert(s, key, now, wait)
	}
	return e, now
}

// errKeyedNaN is the panic of a key that does not equal itself.
const errKeyedNaN = "ratelimit: Keyed key not equal to itself (a NaN?)"

// errZeroKeyed is the panic of a zero Keyed's first use.
const errZeroKeyed = "ratelimit: use NewKeyed; the zero Keyed is not usable"

// check panics if k was not made by NewKeyed: it has no constructor to call,
// and no maps to hold keys.
func (k *Keyed[K, L]) check() {
	if k.newLimit == nil {
		panic(errZeroKeyed)
	}
}

// use marks e used at now and, if wait, counts a waiter. The shard's lock
// must be held, shared or not.
func (e *keyedEntry[L]) use(now int64, wait bool) {
	if e.lastUsed.Load() != now {
		e.lastUsed.Store(now)
	}
	if wait {
		e.waiting.Add(1)
	}
}

// insert makes the entry of key, counting the caller among its waiters if
// wait. The constructor runs without the lock: if it panics, nothing has
// changed.
func (k *Keyed[K, L]) insert(s *keyedShard[K, L], key K, now int64, wait bool) *keyedEntry[L] {
	if key != key {
		// A NaN (or a struct or interface holding one) would be put in
		// the map and never found again: each call would get a new
		// limiter, with a fresh allowance, and leave it in the map for
		// good. Here, on the way to a first insert, the check costs the
		// calls of known keys nothing.
		panic(errKeyedNaN)
	}
	e := &keyedEntry[L]{lim: k.newLimit(key)}
	if isNil(e.lim) {
		// Now, rather than as a nil dereference at the key's every use.
		panic(fmt.Sprintf("ratelimit: NewKeyed's newLimiter returned nil for key %#v", key))
	}
	e.ns = nsOf(e.lim)
	e.lastUsed.Store(now)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.entries[key]; old != nil {
		e = old // another goroutine made it first
		e.use(now, wait)
		return e
	}
	k.evictLocked(s, now)
	s.entries[key] = e
	e.use(now, wait)
	return e
}

// evictLocked removes idle keys from a sample of the shard, and while the
// shard is still full, the least recently used of the sample. A sample keeps
// the cost of an insertion constant whatever the number of keys; Go's map
// iteration starts at a random place, so samples differ. s.mu must be held.
//
// The shard may be over its cap, not just full: the keys made while the
// others were waited on are spared (see KeyedConfig.MaxKeys). Evicting one
// key per new key would keep that excess once nobody waits, until the keys
// were idle for the TTL; so as many as it takes go, of the sample.
func (k *Keyed[K, L]) evictLocked(s *keyedShard[K, L], now int64) {
	var keys [keyedSample]K // the sample's keys that may go for the cap
	var useds [keyedSample]int64
	n := 0
	seen := 0
	for key, e := range s.entries {
		if seen == keyedSample {
			break
		}
		seen++
		if e.waiting.Load() > 0 {
			// Its waiters hold its limiter: a new one for the key would
			// let newcomers past them, with a fresh allowance.
			continue
		}
		used := e.lastUsed.Load()
		if idle := subSat(now, used); idle > k.ttl || idle < -clockJump {
			// Idle, or last used on another clock (see clockJump),
			// whose times would otherwise look the newest.
			delete(s.entries, key)
			continue
		}
		keys[n], useds[n] = key, used
		n++
	}
	for n > 0 && len(s.entries) >= s.max {
		lru := 0
		for i := 1; i < n; i++ {
			if useds[i] < useds[lru] {
				lru = i
			}
		}
		delete(s.entries, keys[lru])
		n--
		keys[lru], useds[lru] = keys[n], useds[n]
	}
}

// Allow reports whether one event of key may happen now, and takes it if so.
func (k *Keyed[K, L]) Allow(key K) bool { return k.AllowN(key, 1) }

// AllowN reports whether n events of key may happen now, and takes them if so.
//
// AllowN panics if n is below 1.
func (k *Keyed[K, L]) AllowN(key K, n int) bool {
	checkN(n, "Keyed.AllowN")
	e, now := k.entry(key, false, "ratelimit: Keyed.AllowN")
	if e.ns != nil {
		return e.ns.allowAt(n, now)
	}
	return e.lim.AllowN(n)
}

// WaitN waits until n events of key may happen, as the key's limiter's WaitN
// does.
//
// WaitN panics if n is below 1.
func (k *Keyed[K, L]) WaitN(ctx context.Context, key K, n int) error {
	checkN(n, "Keyed.WaitN")
	k.check() // the zero Keyed panics even with a done ctx
	// And so does a bad key: misuse panics whatever the state of ctx.
	if !keycheck.Equal(key, "ratelimit: Keyed.WaitN") {
		panic(errKeyedNaN)
	}
	if err := waitq.CtxErr(ctx, "ratelimit"); err != nil {
		return err
	}
	e, _ := k.entry(key, true, "ratelimit: Keyed.WaitN")
	defer func() {
		e.lastUsed.Store(nowNs()) // used until now
		e.waiting.Add(-1)
	}()
	return e.lim.WaitN(ctx, n)
}

// waitRequest is WaitN for a request of Transport, limited under label: see
// the function waitRequest. The key's limiter, if it is of this package, is
// tried first at the time entry read, as its WaitN would try at a time it
// read itself: a request that need not wait costs one clock read, as AllowN
// does, where WaitN reads the clock three times. The key's limiter refuses
// there while others wait, so no one overtakes them.
func (k *Keyed[K, L]) waitRequest(ctx context.Context, key K, n int, label string) error {
	checkN(n, "Keyed.WaitN")
	k.check()
	if err := waitq.CtxErr(ctx, "ratelimit"); err != nil {
		return err
	}
	e, now := k.entry(key, true, "ratelimit: Keyed.WaitN")
	if e.ns != nil && e.ns.allowAt(n, now) {
		e.waiting.Add(-1) // used at now, which entry marked
		return nil
	}
	defer func() {
		e.lastUsed.Store(nowNs()) // used until now
		e.waiting.Add(-1)
	}()
	return waitRequest(ctx, e.lim, n, label)
}

// keyed returns k: see keyedRequests.
func (k *Keyed[K, L]) keyed() any { return k }

// Take is AllowN with the details of the decision. If the key's limiter is
// not a Taker, the decision has only Allowed, and Remaining Unknown.
//
// Take panics if n is below 1.
func (k *Keyed[K, L]) Take(key K, n int) Decision {
	checkN(n, "Keyed.Take")
	e, now := k.entry(key, false, "ratelimit: Keyed.Take")
	return e.take(n, now)
}

// take is Take of the entry's limiter, now being the clock read of the
// lookup.
func (e *keyedEntry[L]) take(n int, now int64) Decision {
	if e.ns != nil {
		return e.ns.takeAt(n, now) // one clock read in all, as AllowN
	}
	if t, ok := any(e.lim).(Taker); ok {
		return t.Take(n)
	}
	return Decision{Allowed: e.lim.AllowN(n), Remaining: Unknown}
}

// takeContext is Take for Middleware, which asks with the request's ctx: a
// key's limiter with TakeContext (redislimit's Handle, or a Tally's wrapper
// of one) is asked with it, so that a decision that waits for Redis ends
// with the request; any other is asked as Take asks it, whatever ctx.
//
// The key counts as waited on while its decision is under way, as in WaitN:
// a decision may take a round trip, during which the new keys of other
// calls must not evict the key, whose next call would get a new limiter.
func (k *Keyed[K, L]) takeContext(ctx context.Context, key K, n int) (Decision, error) {
	checkN(n, "Keyed.Take")
	e, now := k.entry(key, true, "ratelimit: Keyed.Take")
	if t, ok := any(e.lim).(contextTakerOne); ok && e.ns == nil {
		defer func() {
			e.lastUsed.Store(nowNs()) // used until now
			e.waiting.Add(-1)
		}()
		return t.TakeContext(ctx, n)
	}
	e.waiting.Add(-1) // decided at now, which entry marked
	return e.take(n, now), nil
}

// quietTakeKey is Take counted by no Tally around the key's limiter (see
// quietTake).
func (k *Keyed[K, L]) quietTakeKey(key K, n int) Decision {
	e, now := k.entry(key, false, "ratelimit: Keyed.Take")
	if e.ns != nil {
		return e.ns.takeAt(n, now)
	}
	return quietTake(e.lim, n)
}

// Len returns the number of keys held at the moment of the call.
func (k *Keyed[K, L]) Len() int {
	k.check()
	n := 0
	for i := range k.mask + 1 {
		s := &k.shards[i]
		s.mu.RLock()
		n += len(s.entries)
		s.mu.RUnlock()
	}
	return n
}

// Limiter returns the limiter of key as a Limiter of its own: a handle to use
// where a single Limiter is expected. The handle is a Taker too, whose Take is
// the Keyed's.
//
// Limiter panics on a zero Keyed, and on a key that the Keyed's other
// methods panic on, at once rather than at the handle's every use, far from
// the call that made it.
func (k *Keyed[K, L]) Limiter(key K) Limiter {
	k.check()
	if !keycheck.Equal(key, "ratelimit: Keyed.Limiter") {
		panic("ratelimit: Keyed.Limiter with a key not equal to itself (a NaN?)")
	}
	return keyedHandle[K, L]{k, key}
}

type keyedHandle[K comparable, L Limiter] struct {
	k   *Keyed[K, L]
	key K
}

func (h keyedHandle[K, L]) AllowN(n int) bool   { return h.k.AllowN(h.key, n) }
func (h keyedHandle[K, L]) Take(n int) Decision { return h.k.Take(h.key, n) }
func (h keyedHandle[K, L]) quietTake(n int) Decision {
	return h.k.quietTakeKey(h.key, n)
}
func (h keyedHandle[K, L]) WaitN(ctx context.Context, n int) error {
	return h.k.WaitN(ctx, h.key, n)
}

func (h keyedHandle[K, L]) waitRequest(ctx context.Context, n int, label string) error {
	return h.k.waitRequest(ctx, h.key, n, label)
}
