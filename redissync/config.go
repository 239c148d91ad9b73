package redissync

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config configures a Semaphore.
type Config struct {
	// Client is the Redis client: a single node, Sentinel or Cluster.
	// Required.
	Client redis.UniversalClient

	// Name names the semaphore: every Semaphore of the same Name and Prefix,
	// in any process, shares its permits. Required. All of them must agree
	// on N. It may not hold a brace: the keys carry "{Name}" as their hash
	// tag, so that Redis Cluster keeps them in one slot.
	Name string

	// N is the number of permits, at least 1. NewLock takes 0 or 1.
	N int

	// Lease is how long a permit outlives the last renewal of its holder:
	// the time a crashed process keeps its permits. Required, from 10
	// milliseconds to a year; it is counted in whole milliseconds. The
	// holder renews it every third of it. Processes sharing a Name may use
	// different Leases: a waiter's place in line carries its own, and a
	// permit handed to it by another process's Release is held for it.
	Lease time.Duration

	// Timeout bounds each round trip to Redis: a renewal, a Release, each
	// attempt of Acquire, the time it waits for the round trip under way
	// to end included (see Connections in the package's doc). 0 means a
	// quarter of the Lease, at most a second.
	// It must be below a third of the Lease, so that a renewal that times
	// out leaves time for another. It holds whatever the client's own
	// timeouts, and so does a call's ctx. A client with
	// Options.ContextTimeoutEnabled ends its round trips there too; with
	// another, a round trip that the call stopped waiting for runs on, in
	// a goroutine of its own, until the client's ReadTimeout. Either way,
	// what an attempt of Acquire or TryAcquire leaves in Redis, should it
	// land after the call gave up, is taken back once its round trip has
	// ended, or, with ContextTimeoutEnabled, after the client's
	// ReadTimeout (the time its bytes in flight may take).
	Timeout time.Duration

	// Poll is how often a waiter asks Redis again when no message came:
	// waiters are woken by pub/sub, and the poll only makes up for a lost
	// message or a lease that ended unreleased. 0 means a second. A waiter
	// that stops asking (its process died) loses its place in line after
	// three Polls and two Timeouts. At least 10 milliseconds: a waiter
	// must not hammer Redis.
	Poll time.Duration

	// Prefix starts every key; the default is "redissync:". It may not hold
	// a brace, as Name may not.
	Prefix string
}

const (
	minLease = 10 * time.Millisecond
	maxLease = 365 * 24 * time.Hour
	minPoll  = 10 * time.Millisecond
	maxPoll  = time.Hour
)

// New returns a Semaphore of cfg.N permits. It returns an error for a bad
// Config: a nil Client, an empty Name, a Name or Prefix holding a brace
// (the keys' hash tag is {Name}), an N below 1, a Lease outside 10
// milliseconds to a year, a Timeout negative or not below a third of the
// Lease, or a Poll other than 0 outside 10 milliseconds to an hour.
func New(cfg Config) (*Semaphore, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	return newSemaphore(cfg, cfg.Name, randomHex(), nil), nil
}

// normalize checks cfg, as New documents, and returns it with its defaults
// filled in.
func (cfg Config) normalize() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("redissync: bad Config: "+format, args...)
	}
	switch {
	case cfg.Client == nil || nilClient(cfg.Client):
		return bad("Client is required")
	case cfg.Name == "":
		return bad("Name is required")
	case strings.ContainsAny(cfg.Name, "{}"):
		return bad("Name %q holds a brace; the keys carry {Name} as their hash tag for Redis Cluster", cfg.Name)
	case strings.ContainsAny(cfg.Prefix, "{}"):
		return bad("Prefix %q holds a brace; the keys carry {Name} as their hash tag for Redis Cluster", cfg.Prefix)
	case cfg.N < 1:
		return bad("N is %d; it must be at least 1", cfg.N)
	case cfg.Lease <= 0:
		return bad("Lease is %v; it is required, and must be above 0", cfg.Lease)
	case cfg.Lease < minLease || cfg.Lease > maxLease:
		return bad("Lease is %v; it must be from %v to %v", cfg.Lease, minLease, maxLease)
	case cfg.Timeout < 0:
		return bad("Timeout is negative")
	case cfg.Timeout > 0 && cfg.Timeout >= cfg.Lease/3:
		return bad("Timeout %v is not below a third of the Lease %v: a renewal that times out would leave no time for another", cfg.Timeout, cfg.Lease)
	case cfg.Poll < 0 || (cfg.Poll > 0 && cfg.Poll < minPoll) || cfg.Poll > maxPoll:
		return bad("Poll is %v; it must be 0 (the default) or from %v to %v", cfg.Poll, minPoll, maxPoll)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = min(time.Second, cfg.Lease/4)
	}
	if cfg.Poll == 0 {
		cfg.Poll = time.Second
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "redissync:"
	}
	return cfg, nil
}

// A shape is what every Semaphore made with one Config shares: the scripts'
// arguments and the heads of their commands, made interfaces once. A Keyed
// makes its keys' Semaphores from one shape, so that a key's first use,
// most of a lock per account's uses, costs a handful of allocations rather
// than several dozen.
type shape struct {
	lock                                          bool
	nArg, leaseArg, entryArg, keyTTLArg           any
	leaseMs                                       string
	acquire, release, renew, take, give           []any // "evalsha", hash, number of keys
	acquireSc, releaseSc, renewSc, takeSc, giveSc *redis.Script
}

// newShape returns the shape of the Semaphores of a normalized cfg, of a
// Keyed's keys if keyed.
func newShape(cfg Config, keyed bool) *shape {
	entry := 3*cfg.Poll + 2*cfg.Timeout
	leaseMs := strconv.FormatInt(cfg.Lease.Milliseconds(), 10)
	sh := &shape{
		lock:      cfg.N == 1,
		nArg:      strconv.Itoa(cfg.N),
		leaseArg:  leaseMs,
		leaseMs:   leaseMs,
		entryArg:  strconv.FormatInt(entry.Milliseconds()+1, 10),
		keyTTLArg: strconv.FormatInt((2*(cfg.Lease+entry) + time.Second).Milliseconds(), 10),
	}
	sc, take := setScripts, lockTake
	switch {
	case sh.lock && keyed:
		sc, take = keyedLockScripts, keyedLockTake
	case sh.lock:
		sc = lockScripts
	case keyed:
		sc = keyedSetScripts
	}
	head := func(sc *redis.Script, keys int) []any { return []any{"evalsha", sc.Hash(), keys} }
	sh.acquireSc, sh.acquire = sc.acquire, head(sc.acquire, 4)
	sh.releaseSc, sh.release = sc.release, head(sc.release, 4)
	sh.renewSc, sh.renew = sc.renew, head(sc.renew, 1)
	if sh.lock {
		sh.takeSc, sh.take = take, head(take, 2)
		sh.giveSc, sh.give = lockGive, head(lockGive, 1)
	}
	return sh
}

// newSemaphore makes the Semaphore of name for a normalized cfg, whose ids
// carry tag (hex digits, unique across processes). A Semaphore of a Keyed
// (k) takes its ids from k's count, and is told of hand-overs on k's
// channel, which every key of k shares: so k's channel stays subscribed
// while any of its keys has a waiter, and a key's first waiter sends no
// SUBSCRIBE. Its tokens are counted by the keyed scripts.
func newSemaphore(cfg Config, name, tag string, k *Keyed) *Semaphore {
	if k != nil {
		return k.newSemaphore(name, "")
	}
	sh := newShape(cfg, false)
	s := &Semaphore{wakeArg: cfg.Prefix + "{" + name + "}:wake:", idPrefix: tag + "/" + sh.leaseMs + "/"}
	s.channel = s.wakeArg.(string) + tag
	s.ids = &s.ownIDs
	s.pipe = &s.ownPipe
	s.ownPipe.init(cfg)
	s.init(cfg, sh, name, "")
	return s
}

// newSemaphore makes the Semaphore of the key name+suffix of k.
func (k *Keyed) newSemaphore(name, suffix string) *Semaphore {
	s := &Semaphore{keyed: k, wakeArg: k.wakeArg, channel: k.channel, idPrefix: k.idPrefix, ids: &k.ids, pipe: &k.pipe}
	// A key's Semaphore is made when this process comes to it: often
	// while another holds it. Its first attempt is then the full
	// acquire script, which takes a free lock as the fast way does,
	// rather than the fast way, which would fail first.
	s.contended.Store(true)
	s.init(k.cfg, k.shape, name, suffix)
	return s
}

// init sets what s takes from cfg and sh, and its keys, those of the Name
// name+suffix: all four in one string (one allocation, not four).
func (s *Semaphore) init(cfg Config, sh *shape, name, suffix string) {
	s.client = cfg.Client
	s.n = cfg.N
	s.lease = cfg.Lease
	s.timeout = cfg.Timeout
	s.poll = cfg.Poll
	s.lock = sh.lock
	s.nArg, s.leaseArg, s.entryArg, s.keyTTLArg = sh.nArg, sh.leaseArg, sh.entryArg, sh.keyTTLArg
	s.ctxTimeouts = honoursDeadlines(cfg.Client)
	s.roundTrip = max(readTimeout(cfg.Client), cfg.Timeout)

	base := len(cfg.Prefix) + len(name) + len(suffix) + 3 // "{" and "}:"
	var b strings.Builder
	b.Grow(4*base + len("holdersqueueqexpseq"))
	var ends [4]int
	for i, part := range [4]string{"holders", "queue", "qexp", "seq"} {
		b.WriteString(cfg.Prefix)
		b.WriteByte('{')
		b.WriteString(name)
		b.WriteString(suffix)
		b.WriteString("}:")
		b.WriteString(part)
		ends[i] = b.Len()
	}
	all, from := b.String(), 0
	for i, end := range ends {
		s.keyArr[i] = all[from:end]
		s.keyArgs[i] = s.keyArr[i]
		from = end
	}
	s.keys = s.keyArr[:]
	s.calls[0] = call{sc: sh.acquireSc, head: sh.acquire, keys: s.keyArgs[:]}
	s.calls[1] = call{sc: sh.releaseSc, head: sh.release, keys: s.keyArgs[:], frees: true}
	s.calls[2] = call{sc: sh.renewSc, head: sh.renew, keys: s.keyArgs[:1]}
	s.acquireCall, s.releaseCall, s.renewCall = &s.calls[0], &s.calls[1], &s.calls[2]
	if s.lock {
		s.takeKeys = [2]any{s.keyArgs[0], s.keyArgs[3]}
		s.calls[3] = call{sc: sh.takeSc, head: sh.take, keys: s.takeKeys[:]}
		s.calls[4] = call{sc: sh.giveSc, head: sh.give, keys: s.keyArgs[:1], frees: true}
		s.takeCall, s.giveCall = &s.calls[3], &s.calls[4]
	}
}

// NewLock returns a Semaphore of one permit: a lock. cfg.N must be 0 or 1.
func NewLock(cfg Config) (*Semaphore, error) {
	if cfg.N != 0 && cfg.N != 1 {
		return nil, errNotALock(cfg.N)
	}
	cfg.N = 1
	return New(cfg)
}

// init sets up the pipe of a Semaphore, or of a Keyed, made with cfg. A
// round trip of a client that may never end it keeps its place for as long
// as the client would wait for a reply at most (see pipe).
func (p *pipe) init(cfg Config) {
	p.client, p.timeout = cfg.Client, cfg.Timeout
	if !honoursDeadlines(cfg.Client) {
		p.hold = max(readTimeout(cfg.Client), cfg.Timeout)
	}
}

// honoursDeadlines reports whether c gives up when a context's deadline
// passes; otherwise a call runs in a goroutine that we stop waiting for.
func honoursDeadlines(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		// Each shard is a Client made with the Ring's flag.
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// goRedisReadTimeout is go-redis's default ReadTimeout (since v9.22, the
// least version this module requires).
const goRedisReadTimeout = 5 * time.Second

// readTimeout returns c's ReadTimeout: how long it waits for a reply when
// no deadline bounds it (go-redis's default if it is not set), or 3
// seconds for a client whose reads have no deadline at all, which may wait
// for good: a pipe's hold must end.
func readTimeout(c redis.UniversalClient) time.Duration {
	var d time.Duration
	switch c := c.(type) {
	case *redis.Client:
		d = c.Options().ReadTimeout
	case *redis.ClusterClient:
		d = c.Options().ReadTimeout
	case *redis.Ring:
		// Passed as it is to each shard's Client: a Ring's own Options
		// keep the user's value, not go-redis's reading of it, in which 0
		// is the default (what a Client's Options hold instead).
		if d = c.Options().ReadTimeout; d == 0 {
			d = goRedisReadTimeout
		}
	}
	if d <= 0 {
		d = 3 * time.Second
	}
	return d
}

// nilClient reports whether c holds a nil pointer of one of go-redis's client
// types, which the interface's nil check does not catch.
func nilClient(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c == nil
	case *redis.ClusterClient:
		return c == nil
	case *redis.Ring:
		return c == nil
	}
	return false
}

func errNotALock(n int) error {
	return fmt.Errorf("redissync: bad Config: N = %d for a lock; a lock has 1 permit", n)
}
