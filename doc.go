// Package ctxsync provides synchronization primitives whose blocking calls take
// a context.Context, so that a goroutine waiting for a lock, a permit or a
// signal can give up when its request is cancelled or its deadline passes.
//
// Go's sync package cannot be cancelled: a goroutine blocked in
// sync.Mutex.Lock or sync.Cond.Wait stays blocked. ctxsync fills that gap with
// primitives that wait on channels, so that every wait can select on
// ctx.Done(), and that serve their waiters first in, first out.
//
// # Primitives
//
//	Lock              mutual exclusion; the zero value is ready to use
//	RWLock            many readers or one writer, fair to both
//	Semaphore         n permits; Release beyond n raises the count
//	BoundedSemaphore  n permits; a Release beyond n is a bug and panics
//	Weighted          a budget of capacity units, of which each Acquire takes n;
//	                  resizable at run time
//	Event             a flag that goroutines wait for; Done for select
//	Condition         wait, with a ctx, for state guarded by a Lock to change
//	Barrier           a fixed number of goroutines meet, round after round
//	Queue             a FIFO queue with backpressure, Close, CloseNow, TaskDone
//	                  and Join
//	PriorityQueue     a queue that hands out the lowest priority value first,
//	                  with the same shutdown and task accounting
//	Flight            singleflight whose callers can leave
//	Lazy              a value made once by an init that may fail: kept after a
//	                  success, tried again after a failure
//	WaitGroup         sync.WaitGroup whose Wait takes a ctx; Add at any time
//	Watch             the latest value and its version; Load never waits, Wait
//	                  and Changes wake on each Store
//	KeyedLock         a Lock per key; memory follows the keys in use
//
// The subpackages build on them: ratelimit (rate limiters), breaker (a
// circuit breaker), pool (a resource pool), retry (retries with backoff, a
// retry budget and an HTTP transport), group (run tasks together and wait
// for them: Map, MapAll, ForEach) and adaptive (a concurrency limit that
// follows the service's latency and sheds what it cannot serve in time).
//
// # Rules every blocking call follows
//
//   - ctx is the first parameter. A nil ctx panics.
//   - On failure the call returns ctx.Err() itself, unwrapped, or an exported
//     sentinel error, so that errors.Is(err, context.Canceled) and
//     err == context.DeadlineExceeded both work.
//   - A ctx that is already done fails the call even when the call could
//     proceed at once, and changes nothing.
//   - A ctx that ends while the call waits removes the waiter and changes
//     nothing. A waiter whose ctx has ended is never granted anything: what
//     is freed after the ctx ended goes to the next waiter. A permit, lock,
//     item or wake-up handed over at the same moment is never lost: the call
//     either returns nil holding it or passes it on to the next waiter and
//     returns ctx.Err().
//   - Waiters are served first in, first out. A newcomer, including a TryX
//     call, never overtakes a waiter that is already queued.
//   - Each call that takes something (a lock, a permit, an item) has a
//     non-blocking TryX twin. A wait for a state has a look that never
//     blocks instead: Event.IsSet, Lazy.Peek, Watch.Load, WaitGroup.Count,
//     the queues' Unfinished (for Join) and Barrier.Broken; a Condition's
//     caller tests its own predicate, under the lock.
//   - Misuse by the programmer (Unlock of an unlocked Lock, negative weights,
//     releasing more than was acquired) panics with a message that begins
//     with "ctxsync:". Conditions that arise at run time are returned as
//     errors.
//   - No call holds an internal lock while it runs code of the caller.
//   - Every type is safe for concurrent use and must not be copied after first
//     use; go vet reports copies.
//
// # Configuration, across the library
//
// One rule for bad configuration, in every package and module:
//
//   - A constructor that returns no error takes configuration that is
//     normally written in the program (a breaker's thresholds, a rate and a
//     burst, a group's limit, a metrics namespace): a wrong one is a bug,
//     and the constructor panics with a message that names the package. For
//     the same values read from outside (a file, flags, the environment),
//     the package offers a check that returns the complaint as an error
//     instead: a Validate method on the config type (breaker.Settings,
//     retry.Policy, group.Options, ratelimit.KeyedConfig and
//     MiddlewareConfig, ctxsyncprom.Config), a ValidateX function beside a
//     constructor that takes plain arguments (ratelimit.ValidateTokenBucket),
//     and a Check method on each HTTP Transport, which is a struct literal
//     that nothing constructs: call it where the Transport is built, so that
//     a mistake is not first found by a request.
//   - A constructor that returns an error (pool.New, and those of the Redis
//     and OpenTelemetry modules, which meet a server or a meter provider)
//     returns every configuration mistake through that error too, and never
//     panics for one.
//
// The names follow one pattern. A constructor's configuration is a Config,
// save three named before the rule, after the peers their users know:
// breaker.Settings, retry.Policy and group.Options. A zero field means its
// documented default. Where a field or a result needs a "none" (no limit, no
// jitter, a rule off, a count not known, a time that would never do), it is
// -1, and each package names its -1s with constants: retry.NoLimit,
// pool.NoLifetimeJitter, breaker.NoThreshold, ratelimit.Never and more. Among the
// limiters, an AllowN answers yes or no and a Take answers with a
// ratelimit.Decision, whatever the package; the forms that meet a server
// take a ctx and add an error (redislimit's AllowN and TakeContext).
//
// # Testing with synctest
//
// The primitives work inside testing/synctest bubbles: a goroutine waiting on
// one is durably blocked, so virtual time advances past it and
// synctest.Wait returns. A primitive made outside every bubble (a
// package-level one, say) works inside one, and one made inside a bubble keeps
// working after the bubble ends: it may be used by one bubble after another,
// and outside any in between.
//
// One use is refused, by the Go runtime: a hand-over across the edge of a
// bubble. A goroutine waiting inside a bubble blocks on a channel made there,
// which is what makes it durably blocked, and its ctx's Done channel is made
// there too; the runtime ends the program with a fatal error when a goroutine
// outside the bubble touches such a channel. So while a goroutine inside a
// bubble waits on a primitive, no goroutine outside it may make a call that
// serves the waiters: an Unlock, Release, Resize, Put, Get, TaskDone, Set,
// Notify or Reset made outside the bubble then is fatal, even one that frees
// too little to wake anyone, since it looks at the waiters' channels to skip
// those whose ctx has ended (sync.Mutex, which parks without a channel, allows
// it, and so does not make the waiter durably blocked). Barrier.Broken, though
// a look, is fatal from outside too: it reads the parties' channels to break a
// round one of whom has given up. So is a Weighted's TryAcquire that finds
// the units it asks for free while someone is queued: it looks at the queue
// to skip waiters whose ctx has ended, and grants whoever fits before it
// takes. For the same reason, a channel that Event.Done returns inside a
// bubble belongs to that bubble: until the next Clear, that Event must not be
// Set or waited for outside it; and one that it returns outside every bubble
// belongs to none, so that until the next Clear a Wait in a bubble is not
// durably blocked on it, and stops the bubble's clock until the next Set.
// Use a primitive from one bubble at a time, or from outside all of them, as
// you would a channel.
//
// # Costs
//
// The uncontended paths are a single atomic operation plus a check of
// ctx.Err(), with no allocation. A goroutine that finds the lock or the
// permits taken yields its processor once and looks again before it queues:
// when holds are short, the holder usually releases meanwhile, and no queue
// forms. A goroutine that must wait reuses a waiter node of the primitive, so
// steady contention allocates nothing either. First in, first out hands each
// permit straight to the oldest waiter, which must be scheduled before it is
// used: while goroutines are queued, that costs throughput compared with
// sync.Mutex, which lets newcomers barge in. That is the price of the
// guarantee that no waiter starves.
package ctxsync
