package redissync

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

const errZeroKeyed = "redissync: use NewKeyed or NewKeyedLock; the zero Keyed is not usable"

// A Keyed is a Semaphore per key, made on demand: a lock per account, per
// job id, per file, named at run time. Acquire(ctx, "acct-42") waits for
// the permit of key "acct-42" alone; one key's holders and waiters never
// slow another's. It is the redissync form of ctxsync.KeyedLock, with
// Permits: Release the Permit to unlock.
//
// Every key shares the Keyed's Config and, with every Semaphore made on the
// same client, one pub/sub connection (see the package's doc). In the
// process, a key costs something only while this Keyed holds a permit of it
// or waits for one: nothing is kept for a key nobody here holds or waits
// for. In Redis, a key's state is that of a Semaphore named Name + ":" +
// key, and expires once unused, fencing token counter included (see Token).
// Every process that locks the same keys must use a Keyed of the same Name,
// Prefix and N; a Semaphore made by New on a Name of that form counts its
// tokens otherwise, and must not share it.
//
// Use NewKeyed or NewKeyedLock; the zero Keyed is not usable, and panics at
// first use. A Keyed must not be copied after first use. It is safe for
// concurrent use by multiple goroutines, and by many processes sharing one
// Redis.
//
// Fencing tokens are per key, and increase per key as a Semaphore's do.
// Since a key's counter expires with the rest of its state, a key used
// again after a pause counts on from the Redis server's clock (in
// microseconds, times 1.024, rounded down), not from its last token:
// tokens stay above every earlier one of the key as long as the server's
// clock moves on (a microsecond at least between two makings of the
// counter; one that stands still, as miniredis's after SetTime, repeats
// them) and no key is granted more than about a thousand times a
// millisecond. So they do too when the counter is lost otherwise (a
// FLUSHALL), even within the millisecond of the last grant, if every
// process sharing the key runs a version later than v0.1.0: those of v0.1.0
// make the counter from the milliseconds (times 1024), never above what
// later ones make in the same millisecond, and a counter they make within
// the millisecond of a grant may repeat its token or go up to 1023 below
// it. Tokens stay below 2^53 until the year 2248.
type Keyed struct {
	cfg     Config // normalized
	tag     string // every key's Semaphore's
	wakeArg any    // the prefix of the channel, for the scripts
	channel string // where the waiters of every key are told
	ids     atomic.Uint64
	// What every key's Semaphore shares, made once.
	shape    *shape
	idPrefix string // "tag/lease/"
	name     string // Name + ":", which a key ends
	pipe     pipe   // every key's scripts go through it

	mu   sync.Mutex
	keys map[string]*keyedSem // the keys held or waited for; guarded by mu

	wmu     sync.Mutex
	waiting map[string]*Semaphore // each waiter's key's, by id; guarded by wmu
}

// A keyedSem is the Semaphore of one key, and how many Acquires,
// TryAcquires and Permits of this process use it.
type keyedSem struct {
	s    *Semaphore
	refs int // guarded by Keyed.mu
}

// NewKeyed returns a Keyed whose every key is a Semaphore of cfg.N permits.
// cfg.Name names the set of keys (say "account"): it and the key name each
// key's Semaphore. It returns an error for a bad Config, as New does.
func NewKeyed(cfg Config) (*Keyed, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	tag := randomHex()
	sh := newShape(cfg, true)
	k := &Keyed{cfg: cfg, tag: tag, wakeArg: cfg.Prefix + "wake:", channel: cfg.Prefix + "wake:" + tag,
		shape: sh, idPrefix: tag + "/" + sh.leaseMs + "/", name: cfg.Name + ":",
		keys: make(map[string]*keyedSem), waiting: make(map[string]*Semaphore)}
	k.pipe.init(cfg)
	return k, nil
}

// NewKeyedLock returns a Keyed of one permit per key: a lock per key.
// cfg.N must be 0 or 1.
func NewKeyedLock(cfg Config) (*Keyed, error) {
	if cfg.N != 0 && cfg.N != 1 {
		return nil, errNotALock(cfg.N)
	}
	cfg.N = 1
	return NewKeyed(cfg)
}

func (k *Keyed) check() {
	if k == nil || k.keys == nil {
		panic(errZeroKeyed)
	}
}

// N returns the number of permits of each key.
func (k *Keyed) N() int {
	k.check()
	return k.cfg.N
}

// Len returns how many keys this Keyed holds a permit of or waits for now,
// in this process.
func (k *Keyed) Len() int {
	k.check()
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.keys)
}

// Acquire waits for a permit of key, as Semaphore.Acquire does, in line with
// the waiters of the key in every process. Any string is a key; one holding
// a brace may share its Redis Cluster slot with other keys. On failure it
// returns ctx.Err() or an error as Semaphore.Acquire does, and keeps nothing
// of key in the process.
func (k *Keyed) Acquire(ctx context.Context, key string) (*Permit, error) {
	k.check()
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	e := k.ref(key)
	// A client hook (the user's code) may panic in the call, which takes
	// back what it left in Redis; the key's use ends with it too.
	kept := false
	defer func() {
		if !kept {
			k.unref(key, e)
		}
	}()
	p, err := e.s.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	kept = true
	return p, nil // its use of key passes to p: see Permit.unkey
}

// TryAcquire takes a permit of key if one is free and nobody waits for it,
// without waiting, as Semaphore.TryAcquire does: it returns ErrWouldWait if
// not. On failure it keeps nothing of key in the process.
func (k *Keyed) TryAcquire(ctx context.Context, key string) (*Permit, error) {
	k.check()
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	e := k.ref(key)
	// A client hook (the user's code) may panic in the call, which takes
	// back what it left in Redis; the key's use ends with it too.
	kept := false
	defer func() {
		if !kept {
			k.unref(key, e)
		}
	}()
	p, err := e.s.TryAcquire(ctx)
	if err != nil {
		return nil, err
	}
	kept = true
	return p, nil // its use of key passes to p: see Permit.unkey
}

// ref returns the Semaphore of key, made if this process has none, counted
// as used until unref.
func (k *Keyed) ref(key string) *keyedSem {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.keys[key]
	if e == nil {
		e = &keyedSem{s: k.newSemaphore(k.name, key)}
		e.s.key, e.s.ks = key, e
		k.keys[key] = e
	}
	e.refs++
	return e
}

// dispatch passes a pub/sub event on k's channel to the Semaphores it
// concerns: at a subscription, every one with waiters; at a message, those
// of the waiters it names.
func (k *Keyed) dispatch(msg any) {
	var to []*Semaphore
	k.wmu.Lock()
	switch m := msg.(type) {
	case *redis.Subscription:
		seen := make(map[*Semaphore]bool)
		for _, s := range k.waiting {
			if !seen[s] {
				seen[s] = true
				to = append(to, s)
			}
		}
	case *redis.Message:
		f := strings.Fields(m.Payload) // "now lease id:token ..."
		for _, e := range f[min(2, len(f)):] {
			id, _, _ := strings.Cut(e, ":")
			if s := k.waiting[id]; s != nil && !slices.Contains(to, s) {
				to = append(to, s)
			}
		}
	}
	k.wmu.Unlock()
	for _, s := range to {
		s.dispatch(msg)
	}
}

// unref ends a use of e, and forgets key with its last use: a key used
// again is given a new Semaphore, which Redis tells apart from the last by
// its tag.
func (k *Keyed) unref(key string, e *keyedSem) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e.refs--
	if e.refs == 0 && k.keys[key] == e {
		delete(k.keys, key)
	}
}
