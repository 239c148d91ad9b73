// Package redislimit is a rate limiter whose state lives in Redis, so that every
// instance of a service shares one limit: a quota of calls to an upstream API,
// say, whatever the number of machines making them.
//
// It is a token bucket, as ratelimit.TokenBucket: a GCRA in one Lua script,
// on the Redis server's clock (TIME), so that the clocks of the callers do not
// matter. The script is loaded once and run by its SHA, and sent again if Redis
// has forgotten it. Each key's state expires once its bucket would be full
// again, so idle keys cost nothing.
//
// A decision takes one round trip. Under load, decisions share them: a
// Limiter keeps a few round trips under way (Config.MaxRoundTrips), and the
// calls that come meanwhile go together in one pipeline, so that the server
// and the client spend a system call on many decisions rather than on each.
//
// Keys carry a hash tag ("prefix{key}"), so the limiter works on Redis Cluster;
// it accepts any redis.UniversalClient (a single node, Sentinel, or Cluster).
// The tag must not be empty, or Redis hashes the whole key, and a key's
// limits (Config.Limits) fall in different slots, where one script cannot
// reach them all. So the empty key, and a key that begins with "}" (whose
// tag would end there) or with a zero byte, go between the braces after a
// zero byte: Limiter.Key("}x") is "prefix{\x00}x}", whose tag is "\x00". All
// such keys share that one slot; every other key is its own tag, as before.
// A Prefix that empties the tag itself (its first "{" followed at once by
// "}") is refused by New for a Cluster client with Limits.
//
// Every string is a key, the empty one included: it has its bucket, apart
// from every other key's, as it has its limiter in a ratelimit.Keyed, which
// a Limiter stands in for (a KeyTaker for ratelimit.Middleware, a KeyWaiter
// for ratelimit.Transport). A panic there would take down the handler of
// every request whose key is "": one whose Key function found no API key,
// or, with Middleware's default Key, every request of a server on a Unix
// socket, whose RemoteAddr is empty. Those requests share one bucket, as
// they would in a Keyed; a Key function that must not let them should give
// them keys of their own.
//
// When Redis is unreachable or slow, each call gives up after Config.Timeout
// and follows Config.Policy: allow (FailOpen), refuse (FailClosed), or fall
// back to an in-process token bucket at a share of the rate (FailLocal). A
// call never hangs past its context, and never panics on a Redis error.
//
// # The limit lives in Redis
//
// The limit is never exceeded while Redis keeps its keys. A key lost is a
// bucket full again, so each loss grants up to a burst more per key, whatever
// the Policy: a key deleted, a FLUSHALL or FLUSHDB, a key evicted for memory,
// a restart that loaded no state or an older one, a failover to a replica
// that had not yet received the latest writes. Where the limit must hold
// through those, run Redis with every key kept: maxmemory-policy noeviction
// (each key has a time to live, so the volatile-* policies evict them too),
// and persistence by the append-only file, appendonly yes, with appendfsync
// always to lose nothing at a crash (everysec may lose about the last second
// of grants, up to a burst plus a second's worth per key). RDB snapshots
// alone lose everything since the last one. Replication is asynchronous: a
// failover may lose the last writes as a crash does.
package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// ErrUnavailable is matched (errors.Is) by the error a Limiter returns when
// Redis failed and the decision came from its Policy. The error also wraps the
// Redis client's error.
var ErrUnavailable = errors.New("redislimit: redis unavailable")

// A Limiter limits events per key, with its state in Redis.
//
// Use New; the zero Limiter is not usable, and panics at first use (Check
// says so beforehand, as ratelimit.Transport.Check and ratelimit.Middleware
// ask it). A Limiter
// must not be copied after first use: hold it by the pointer New returns (a
// copy would split its round trips and local state from the original's; go
// vet reports one). It is safe for concurrent use by
// multiple goroutines, and by many processes sharing one Redis.
//
// A Limiter made outside a testing/synctest bubble works inside one, and one
// made inside keeps working after it, but not from both sides at once: a call
// in a bubble that waits for a pipeline run from outside it is seen by the
// bubble as blocked for good, so its Timeout passes at once on the bubble's
// clock.
type Limiter struct {
	client   redis.UniversalClient
	limit            // Config's Rate and Burst
	more     []limit // Config.Limits
	most     int     // the least burst of all the limits
	prefix   string
	timeout  time.Duration
	policy   Policy
	local    *ratelimit.Keyed[string, *localBucket]
	onError  func(string, error)
	failures atomic.Int64
	batch    batcher

	// localMost is the least burst of FailLocal's in-process buckets: a
	// call for more is never granted by them.
	localMost int

	// localUsed is set once FailLocal's in-process buckets have decided a
	// call: until then there is none for Reset to refill.
	localUsed atomic.Bool

	// ctxTimeouts reports that the client honours context deadlines
	// (Options.ContextTimeoutEnabled): then the Timeout bounds a call by
	// itself. Otherwise a call runs in a goroutine that we stop waiting for.
	ctxTimeouts bool
}

// Key returns the Redis key of key: the Prefix, then key between braces, as
// its hash tag. The empty key, and one that begins with "}" or a zero byte,
// go between the braces after a zero byte (see the package doc).
func (l *Limiter) Key(key string) string {
	l.check()
	return l.prefix + "{" + tagOf(key) + "}"
}

// tagOf returns what goes between the braces of key's Redis key: key, or,
// for a key whose tag would be empty ("" or one that begins with "}"), key
// after a zero byte. Keys that begin with a zero byte get one more, so that
// no two keys share a Redis key.
func tagOf(key string) string {
	if key == "" || key[0] == '}' || key[0] == 0 {
		return "\x00" + key
	}
	return key
}

// emptiesTag reports whether prefix, put before "{key}", makes Redis Cluster
// hash every key whole: its first "{" is followed at once by "}".
func emptiesTag(prefix string) bool {
	i := strings.IndexByte(prefix, '{')
	return i >= 0 && i+1 < len(prefix) && prefix[i+1] == '}'
}

const (
	errZeroLimiter = "redislimit: use New; the zero Limiter is not usable"
	errZeroHandle  = "redislimit: use Limiter.For; the zero Handle is not usable"
)

// check panics if l is the zero Limiter, or nil.
func (l *Limiter) check() {
	if l == nil || l.client == nil {
		panic(errZeroLimiter)
	}
}

// Check returns an error, whose message is the panic of l's methods, if l
// is the zero Limiter (or nil), and nil for a Limiter made by New.
// ratelimit.Transport.Check and ratelimit.Middleware ask it, so that a zero
// Limiter given to them shows where they are built, not at the first
// request.
func (l *Limiter) Check() error {
	if l == nil || l.client == nil {
		return errors.New(errZeroLimiter)
	}
	return nil
}

// checkN panics, for fn, if l is the zero Limiter or n is below 1. Every
// key is valid, the empty one included (see the package doc).
func (l *Limiter) checkN(n int, fn string) {
	l.check()
	if n < 1 {
		panic(fmt.Sprintf("redislimit: %s with n = %d; n must be at least 1", fn, n))
	}
}

// TakeContext reports whether n events of key may happen now, and takes them
// if so, with the details of the decision: it is Take with a ctx and the
// error. As everywhere in the library, a Take gives a Decision and an AllowN
// a yes or no.
//
// If Redis fails to answer within the Timeout, the decision follows the
// Policy and the error, which matches ErrUnavailable, says why: a caller may
// act on the decision alone. FailOpen's Decision has a Remaining of
// ratelimit.Unknown; FailClosed's a RetryAfter and ResetAfter of the
// Timeout; both have the Limit and Window of Rate and Burst. FailLocal's is
// the in-process bucket's, but for more events than that bucket ever holds
// (LocalShare of the Burst) a RetryAfter of the Timeout rather than Never:
// Redis back may grant them. If ctx ends first, TakeContext returns ctx.Err()
// and a zero Decision.
//
// A call that gives up (its ctx ended, or the Timeout passed) while its
// round trip is under way may yet have its events taken by Redis: they then
// count against the limit for nobody, until the bucket refills. They are not
// given back: Redis's answer may never come, and a give-back after others
// have taken could give back more than the call took, and exceed the limit.
//
// More events than the Burst are never allowed, whatever the Policy: the
// Decision says what the bucket holds, with a RetryAfter of ratelimit.Never.
//
// TakeContext panics if n is below 1.
func (l *Limiter) TakeContext(ctx context.Context, key string, n int) (ratelimit.Decision, error) {
	return l.take(ctx, key, n, "TakeContext")
}

// take is TakeContext, with the name of the caller for a panic.
func (l *Limiter) take(ctx context.Context, key string, n int, fn string) (ratelimit.Decision, error) {
	l.checkN(n, fn)
	if err := ctxErr(ctx); err != nil {
		return ratelimit.Decision{}, err
	}
	// More than the burst never fits, whatever Redis holds; ask anyway, for
	// burst+1 events (which cannot overflow), so that the Decision still says
	// what the bucket holds.
	ask := min(n, l.most+1)
	var d ratelimit.Decision
	c := &call{key: key, n: ask}
	v, err := l.roundTrip(ctx, c)
	if err == nil {
		if l.more == nil {
			d = l.decode(v, ask)
		} else {
			d, err = l.decodeAll(c.all, ask)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ratelimit.Decision{}, ctx.Err()
		}
		if n > l.most {
			// No Policy lets it through; FailLocal's limiter is not asked,
			// which would keep a key for nothing.
			return l.decision(false, 0, -1, 0), l.failed(key, err) // -1: RetryAfter Never
		}
		return l.fail(key, n, err)
	}
	if n > l.most {
		d.RetryAfter = ratelimit.Never
	}
	return d, nil
}

// fail decides by the Policy after Redis failed with err.
func (l *Limiter) fail(key string, n int, err error) (ratelimit.Decision, error) {
	err = l.failed(key, err)
	// The Limit comes with its Window, which the Config gives: a quota of
	// Burst per no time at all is what Middleware's headers would say. A
	// refusal is not full again before it may ask again: a client that
	// reads the reset header would come back at once, in a loop, for as
	// long as Redis is down.
	window := l.window()
	switch l.policy {
	case FailClosed:
		return ratelimit.Decision{Allowed: false, Limit: l.burst, Window: window, Remaining: 0,
			RetryAfter: l.timeout, ResetAfter: l.timeout}, err
	case FailLocal:
		l.localUsed.Store(true)
		d := l.local.Take(key, n)
		if d.RetryAfter == ratelimit.Never {
			// n is within the Burst (take refuses more before asking),
			// above the local burst: no wait of the local bucket grants
			// it, but Redis back may. Never would say no wait ever does,
			// and Middleware would send no Retry-After: ask again after
			// the Timeout, as FailClosed says.
			d.RetryAfter = l.timeout
		}
		return d, err
	default:
		return ratelimit.Decision{Allowed: true, Limit: l.burst, Window: window, Remaining: ratelimit.Unknown}, err
	}
}

// failed counts a failure of Redis for key and reports it to OnError, and
// returns the error for the caller, which matches ErrUnavailable.
func (l *Limiter) failed(key string, err error) error {
	l.failures.Add(1)
	if l.onError != nil {
		l.onError(key, err)
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// AllowN reports whether n events of key may happen now, and takes them if
// so: it is TakeContext's Decision.Allowed. If Redis fails to answer within
// the Timeout, the answer follows the Policy and the error, which matches
// ErrUnavailable, says why; if ctx ends first, AllowN returns false and
// ctx.Err(). A call that gives up during its round trip may have its events
// taken for nobody, as TakeContext says.
//
// AllowN panics if n is below 1.
func (l *Limiter) AllowN(ctx context.Context, key string, n int) (bool, error) {
	d, err := l.take(ctx, key, n, "AllowN")
	return d.Allowed, err
}

// Allow is AllowN for one event.
func (l *Limiter) Allow(ctx context.Context, key string) (bool, error) {
	d, err := l.take(ctx, key, 1, "Allow")
	return d.Allowed, err
}

// Take is TakeContext without a context (each call still ends after the
// Timeout) and without the error, which OnError receives. It makes a Limiter
// a ratelimit.KeyTaker, for ratelimit.Middleware; which calls TakeContext
// instead, with the request's ctx, so that a request whose client has gone
// costs no wait for Redis.
func (l *Limiter) Take(key string, n int) ratelimit.Decision {
	d, _ := l.take(context.Background(), key, n, "Take")
	return d
}

// WaitN waits until n events of key may happen, then takes them.
//
// Waiters are not queued across instances: each asks again when the limiter
// says the events will be there, so under contention a newcomer may be served
// before an older waiter. It fails at once with ratelimit.ErrExceedsBurst if n
// is above the burst, and with a *ratelimit.DeadlineError once the events
// cannot come before the deadline of ctx: it says how long the wait would
// be, and errors.Is matches it with ratelimit.ErrWouldExceedDeadline and
// context.DeadlineExceeded. Otherwise, on failure, it
// returns ctx.Err(); if ctx ended during a round trip, the events of that
// attempt may have been taken for nobody, as TakeContext says.
//
// While Redis is down, WaitN follows the Policy: FailOpen grants at once;
// FailLocal grants when the in-process bucket has the events. When nothing
// can tell when the events will come (FailClosed, or FailLocal with n above
// the local burst, LocalShare of the Burst, which no local bucket grants),
// it asks Redis again after the Timeout (10 milliseconds at least), then
// after twice as long each time up to a second or the Timeout (with some
// jitter, so that waiters do not ask together), until Redis answers or ctx
// ends: it never hammers a Redis that is trying to recover, and never gives
// up before ctx does.
//
// WaitN panics if n is below 1.
func (l *Limiter) WaitN(ctx context.Context, key string, n int) error {
	return l.waitN(ctx, key, n, "WaitN")
}

// waitN is WaitN, with the name of the caller for a panic.
func (l *Limiter) waitN(ctx context.Context, key string, n int, fn string) error {
	l.checkN(n, fn)
	// ctx first: a nil one panics and a done one fails whatever n is, as in
	// ratelimit's WaitN.
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if n > l.most {
		return ratelimit.ErrExceedsBurst
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var backoff time.Duration // 0 until Redis fails
	for {
		d, err := l.take(ctx, key, n, "WaitN")
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if d.Allowed {
			return nil
		}
		wait, known := d.RetryAfter, true
		if err == nil {
			backoff = 0
		} else if l.policy == FailClosed || wait < 0 || (l.policy == FailLocal && n > l.localMost) {
			// A guess, not a promise: back off, and wait for ctx to end
			// rather than fail with ErrWouldExceedDeadline.
			backoff = l.nextBackoff(backoff)
			wait, known = max(wait, backoff/2+rand.N(backoff/2+1)), false
		}
		wait = max(wait, time.Millisecond)
		if dl, ok := ctx.Deadline(); ok && known && time.Until(dl) < wait {
			// A ctx that ended during the round trip, Redis answering all
			// the same, is the caller's error: a cancelled request said
			// to be refused for its deadline would carry a delay that
			// retry.Transport may honour for a client that has gone.
			if err := ctx.Err(); err != nil {
				return err
			}
			// The delay, said: a Transport passes it on rather than ask
			// Redis again how long the wait would be.
			return &ratelimit.DeadlineError{Key: key, Delay: wait}
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// nextBackoff returns the wait after one of b before asking a failing Redis
// again: the Timeout first (10 milliseconds at least), then twice as long
// each time, up to the larger of a second and the Timeout.
func (l *Limiter) nextBackoff(b time.Duration) time.Duration {
	ceiling := max(time.Second, l.timeout)
	if b == 0 {
		return max(l.timeout, 10*time.Millisecond)
	}
	if b > ceiling/2 {
		return ceiling
	}
	return 2 * b
}

// Reset forgets the state of key: its bucket is full again, and so are those
// of Config.Limits.
//
// Under FailLocal, the key's in-process buckets, which decide while Redis
// fails, are full again too, and at once, before Redis is asked: they are
// this instance's alone, and a Reset must not leave a key refused by them
// that Redis, back, would allow (nor one that Redis, still failing, cannot
// forget). So they are full whatever the round trip's outcome. Other
// instances' in-process buckets are theirs: a Reset there refills them.
//
// Reset waits for Redis as AllowN does (MaxRoundTrips and the Timeout
// included). If Redis fails to answer within the Timeout, the error matches
// ErrUnavailable; if ctx ends first, Reset returns ctx.Err(). Either way the
// key may or may not have been deleted in Redis. Its failures are not counted
// by Failures nor told to OnError: the caller has the error. A ctx done
// before the call fails it with ctx.Err() and changes nothing.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	l.check()
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if l.local != nil && l.localUsed.Load() {
		// Before the first outage no key has an in-process bucket, and
		// none is made. After it, Get makes a full one for a key that had
		// none (a Keyed cannot be asked whether it holds a key): an entry
		// until the TTL, within MaxKeys.
		l.local.Get(key).reset()
	}
	if _, err := l.roundTrip(ctx, &call{key: key, reset: true}); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// Failures returns the number of decisions that Redis failed to answer in
// time, each decided by the Policy instead: calls of TakeContext, AllowN,
// Allow, Take and of a Handle, and each attempt of WaitN. A call counts
// once, whether it failed alone, in a pipeline with others, or waiting for a
// round trip; so a stall of Redis under load counts every call made
// meanwhile, not the round trips. A call whose ctx ended, and Reset, do not
// count. OnError hears of the same failures.
func (l *Limiter) Failures() int64 {
	if l == nil {
		panic(errZeroLimiter) // the zero Limiter has none; a nil one is a bug
	}
	return l.failures.Load()
}

// For returns a handle on one key: a ratelimit.Limiter and ratelimit.Taker,
// to use wherever one is expected.
func (l *Limiter) For(key string) *Handle {
	l.check()
	return &Handle{l: l, key: key}
}

// A Handle limits one key of a Limiter. A *Handle, as Limiter.For returns
// it, satisfies ratelimit.Limiter and ratelimit.Taker. Its AllowN and Take
// use no context beyond the Limiter's Timeout (TakeContext and WaitN take
// the caller's); Redis errors go to Config.OnError.
//
// Use Limiter.For; the zero Handle is not usable, and its methods panic
// (Check says so beforehand). A
// Handle is a plain value, which may be copied: a copy limits the same key of
// the same Limiter, whose state is in Redis. It is safe for concurrent use by
// multiple goroutines, as its Limiter is.
type Handle struct {
	l   *Limiter
	key string
}

// AllowN reports whether n events may happen now, and takes them if so.
// It panics if n is below 1.
func (h *Handle) AllowN(n int) bool { return h.take(n, "Handle.AllowN").Allowed }

// Take is AllowN with the details of the decision.
func (h *Handle) Take(n int) ratelimit.Decision { return h.take(n, "Handle.Take") }

// TakeContext is Take with a ctx and the error, as Limiter.TakeContext is
// for h's key. ratelimit's Transport, and its Middleware under Global, ask
// a Handle with it (also inside a Tally's wrapper), so that a request that
// ends, its client gone or its deadline passed, stops waiting for Redis.
func (h *Handle) TakeContext(ctx context.Context, n int) (ratelimit.Decision, error) {
	return h.limiter().take(ctx, h.key, n, "Handle.TakeContext")
}

// WaitN waits until n events may happen, as Limiter.WaitN does.
func (h *Handle) WaitN(ctx context.Context, n int) error {
	return h.limiter().waitN(ctx, h.key, n, "Handle.WaitN")
}

// take is the Limiter's Take, with the name of the Handle's method for a
// panic: the caller's misuse names the call it made.
func (h *Handle) take(n int, fn string) ratelimit.Decision {
	d, _ := h.limiter().take(context.Background(), h.key, n, fn)
	return d
}

// Check returns an error, whose message is the panic of h's methods, if h
// is the zero Handle (or nil), and nil for a Handle made by Limiter.For.
// ratelimit.Transport.Check and ratelimit.Middleware (under Global) ask it,
// also inside a ratelimit.Tally's wrapper.
func (h *Handle) Check() error {
	if h == nil || h.l == nil {
		return errors.New(errZeroHandle)
	}
	return h.l.Check()
}

// limiter returns h's Limiter, or panics if h is the zero Handle, or nil.
func (h *Handle) limiter() *Limiter {
	if h == nil || h.l == nil {
		panic(errZeroHandle)
	}
	return h.l
}

// ctxErr returns ctx.Err(), and panics when ctx is nil, as the standard
// library does. The module keeps its own copy: it uses nothing of ctxsync
// but its public API, so that any release of ctxsync it allows builds it.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		panic("redislimit: nil Context")
	}
	return ctx.Err()
}

// localBucket is FailLocal's in-process limiter of one key: a TokenBucket, or
// the All of one per limit with Config.Limits. Reset replaces it with a full
// one: a Keyed cannot forget one key, nor a bucket be refilled. A Take racing
// with the Reset may land on the bucket replaced, as if it came just before.
type localBucket struct {
	cur   atomic.Pointer[localTaker]
	fresh func() ratelimit.Taker
}

type localTaker struct{ ratelimit.Taker }

func newLocalBucket(fresh func() ratelimit.Taker) *localBucket {
	b := &localBucket{fresh: fresh}
	b.reset()
	return b
}

func (b *localBucket) reset()                                 { b.cur.Store(&localTaker{b.fresh()}) }
func (b *localBucket) Take(n int) ratelimit.Decision          { return b.cur.Load().Take(n) }
func (b *localBucket) AllowN(n int) bool                      { return b.cur.Load().AllowN(n) }
func (b *localBucket) WaitN(ctx context.Context, n int) error { return b.cur.Load().WaitN(ctx, n) }
