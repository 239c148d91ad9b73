// Package redissync is a semaphore and a lock whose state lives in Redis, so
// that they bound a service rather than each of its copies: at most 20 calls
// at once to a licensed API across the fleet, one instance running the
// nightly job.
//
// A Semaphore has N permits under a Name; a lock is the Semaphore of one
// permit (NewLock). Acquire waits in line, first come first served across
// every process; TryAcquire takes a permit only if one is free and nobody
// waits for it, and returns ErrWouldWait if not. Each returns a Permit, or
// an error and no Permit (never neither), and the holder gives the Permit
// back with Release.
//
// Every change of state is one Lua script, so atomic, and every time is the
// Redis server's (TIME, and the expiry of keys), never a caller's clock. Keys
// carry a hash tag ("prefix{name}:..."), so it works on Redis Cluster; it
// takes any redis.UniversalClient, and needs Redis 5 or later (scripts
// replicated by their effects). Each round trip is bounded by the caller's
// ctx and Config.Timeout; a Redis that fails to answer gives an error
// matching ErrUnavailable, never a hang nor a panic.
//
// Make the client with Options.ContextTimeoutEnabled set. The client then
// ends a round trip at the call's deadline itself, and each round trip runs
// on the caller's goroutine (or on a pipeline's: see Connections). A client without it may keep waiting until its
// ReadTimeout, so every round trip runs in a goroutine of its own, which the
// call can stop waiting for: on a 2-core machine against a Redis on
// loopback, that made an uncontended Lock and Release take about a third
// longer. The one thing given up: such a client ends a round trip at a
// deadline, not at a cancellation, so a call whose ctx is cancelled (with no
// deadline passing) returns when its round trip is over: within the Timeout
// of that round trip's start (a fraction of a millisecond from a healthy
// Redis nearby). What an Acquire that gives up leaves in Redis (its place in
// line, a permit granted meanwhile) it gives back in what is left of that
// same Timeout, or, when Redis has not answered by then, in the background:
// it never waits for a second Timeout (see Semaphore.Acquire).
//
// A lock keeps its holder in a key that expires with the lease while nobody
// waits, and that stays, carrying the lease's end, while anyone does: a free
// lock is then taken by a SET NX and a count, and given back by a GET and a
// DEL, in scripts that touch one or two keys. That makes it cheaper than a
// Semaphore of N > 1, whose holders are a sorted set. The two layouts do not
// mix, so every process sharing a Name must use the same N (and, for its
// line to be served as described here, the same version of this package).
// Where they do not (while a deploy changes N, say), a process of the
// other N finds the Name held, or gets an error matching ErrUnavailable:
// they never hold at once.
//
// # Locks per resource
//
// To lock per account, per job id, per file, named at run time, use a
// Keyed (NewKeyedLock, or NewKeyed for N permits per key):
// Acquire(ctx, key) waits for that key's permit alone, and the Permit's
// Release gives it back. Each key is a Name of its own in Redis (Name + ":"
// + key), with its own line and its own fencing tokens; every key shares
// the Keyed's Config. Making a Semaphore per resource with New works too,
// but keeps it for as long as the program holds it; a Keyed keeps a key
// only while a permit of it is held or waited for in the process.
//
// # What a Name costs
//
// In Redis, a Name nobody holds or waits for costs nothing once its keys
// expire, but for the last fencing token of a Semaphore made by New (a few
// tens of bytes), which must outlive the rest for tokens to keep growing.
// A Keyed's token counters expire too: a key used again counts on from the
// Redis server's clock (see Keyed). A Name held costs a key for its holders;
// one with waiters, two more for its line (a few tens of bytes a waiter).
//
// In the process, a Semaphore costs about 2 kilobytes, and nothing while
// idle: no goroutine, no timer, no connection. A Permit held costs a timer
// for its renewals (a goroutine only while a renewal is under way). A
// waiter costs its own goroutine, blocked, and a channel. A key of a Keyed
// costs a Semaphore while held or waited for, and nothing after.
//
// # Connections
//
// Every call is a round trip on the client's pool of connections
// (redis.Options.PoolSize, ten per CPU by default): a process holds no more
// than its client allows, whatever the number of Names. A Semaphore, or a
// Keyed for all its keys, has one round trip under way at a time: the
// scripts of the calls made meanwhile wait, and go together in the next, one
// pipeline, so that under load neither Redis nor the client pays a system
// call for each (on a 2-core machine, most of a contended lock's cost). A
// call made while none is under way goes at once. The client's hooks see a
// pipeline's scripts with a background context, not their callers'. A hook
// that panics reaches the caller whose call it ran in, once what the call
// held or left in line is given back; one that panics in a round trip run
// in the background (a take-back, a renewal) is dropped, as a failed round
// trip: nobody is there to receive it. With a
// client without ContextTimeoutEnabled, which may never end a round trip on
// a connection that stopped answering, a round trip keeps that one place for
// its ReadTimeout (3 seconds if it has none), or the Timeout if longer, at
// most: then the scripts waiting go in a round trip of their own.
//
// Waiters are woken by pub/sub, on one more connection per client: every
// Semaphore and Keyed made on the client shares it, subscribing each
// Semaphore's channel while it has waiters, and one channel for all the keys
// of a Keyed while any has one. So 10,000 Names with a waiter each in one
// process take one pub/sub connection, not 10,000; a Semaphore's first
// waiter sends a SUBSCRIBE on it, not a connection's handshake, and a key's
// first waiter sends nothing while other keys of its Keyed have waiters. The
// connection is opened with the client's first waiter and closed a quarter
// of a second after its last (a channel is unsubscribed as long after its
// last waiter), so that waiters coming and going do not open and close it
// each time. After it is lost, it is made again with every channel
// subscribed, and every waiter of the client asks Redis once more, as a
// hand-over may have been published meanwhile. Keep to one client per Redis
// in a process: each client has a pool and a pub/sub connection of its own.
//
// The program in examples/fleet shows a fleet's uses: a job one instance
// runs, a bound on calls across instances, and a store that checks fencing
// tokens. It runs against the Redis at REDIS_ADDR, or an embedded one.
//
// # Leases
//
// A permit is held for a lease (Config.Lease), which the Permit renews in the
// background every third of it. A process that crashes stops renewing, and
// its permits free themselves when their leases end. The Permit closes its
// Lost channel, and cancels its Context, the moment its lease can no longer
// be proven: Redis answered that it ended, or no renewal got an answer before
// it would end (Redis stopped, or the network cut). The holder must then stop
// using the resource.
//
// # Fencing tokens
//
// A lease alone does not make a lock safe. A holder may pause past its lease
// (a garbage collection, a stopped virtual machine, a slow network packet)
// and then act as if it still held the permit, while another holds it too:
// neither Lost nor any check before acting can close that window, since the
// pause can fall between the check and the act. So each Permit carries a
// fencing token (Token). Redis gives one to each grant, in the script that
// makes it, from a counter of the Name that every process shares: tokens are
// unique per Name, and increase in the order Redis granted the permits. (A
// permit handed to a waiter that then asks for it again, having missed or
// declined the message, is given a new token; the first one was never any
// holder's.) They say nothing of the order in which the holders start using
// their permits: a permit handed to a waiter by message is taken up when
// the message arrives and its process runs, up to two thirds of the Lease
// late (with less of its lease left, the waiter asks again), by which time
// a later grant may have been held and released.
//
// For a lock, that does no harm: a later grant comes only once the lease
// before it has ended or been released. The protected resource must
// remember the highest token it has seen and refuse a request carrying a
// lower one: then a stale holder is refused, whatever its timing. Where the
// resource cannot check a token, the lock is a way to make overlaps rare,
// not impossible.
//
// For a Semaphore of N > 1, that check is wrong. Up to N holders hold at
// once, legitimately, and any of them may be the one with the lowest token:
// a permit held for an hour keeps its token while later ones come and go,
// and one handed over by message may be taken up after a holder with a
// higher token has held and released (6 grants in 12,679 in a run on a
// Cluster, about 10 milliseconds late with 15-millisecond leases). A
// resource that refused lower tokens would refuse live holders. Nor can it
// tell a stale holder by its token: the token names a grant, not a slot
// among the N. What a resource can check for N > 1 is what the token
// identifies: each request's holder, so that it keeps one holder's work
// apart from another's (per-token state, a write done once per token), and
// refuses a token whose holder told it that it was done with it.
// A resource that must itself never serve more than N at once must count
// its own users; to fence each of N slots, use N locks (Names) instead of
// one Semaphore.
//
// Tokens are counted by the scripts, whose numbers are doubles: they are
// exact below 2^53 (about 285 years at a million acquisitions a second).
// Past that, Acquire and TryAcquire give the permit back and fail with
// ErrTokensExhausted rather than hand out a token that may repeat.
//
// # What it does not guarantee
//
// The state lives in one Redis (the primary of a shard): the guarantees hold
// while Redis keeps its keys. A restart that loses the data, a FLUSHALL, an
// eviction for memory, or a failover to a replica that had not received the
// last writes (replication is asynchronous) can lose the permits held and
// the line, so that more than N holders exist for up to a Lease, and can
// lose the last token, so that tokens start again from 1 and fencing fails
// (a Keyed's count on from the server's clock instead: see Keyed).
// Run Redis with maxmemory-policy noeviction and the append-only file
// (appendfsync always) where this matters. It does not follow the Redlock
// scheme over several independent Redis servers: that relies on bounded
// pauses and clock drift, which is what fencing tokens make unnecessary.
//
// Leases are counted on the Redis server's clock, and a holder proves its
// lease on its own, allowing for the two clocks to run at rates up to 2%
// apart. A step of the server's wall clock (a jump set by hand or by NTP)
// moves every lease end with it: a forward step can end leases that their
// holders still believe held. The fencing token is what keeps the resource
// safe then too.
//
// Where correctness must survive the loss of a server, with no assumption on
// timing, use a consensus store (etcd, ZooKeeper, Consul): their locks are
// replicated by consensus and carry a revision or zxid to fence with. This
// package suits bounding load and sparing work done twice, where Redis is
// already at hand and a rare overlap after a Redis failure costs little, or
// where the resource checks fencing tokens.
//
// Waiting is quiet: a script that frees a permit hands it at once to the
// waiter at the head of the line, for the waiter's own Lease, and tells that
// waiter by pub/sub, on a channel of its Semaphore alone (which its client's
// one subscription listens to while the Semaphore has waiters) (or, when
// the waiter shares the releaser's Semaphore, by the releaser's own reply,
// read even when it comes after the releaser stopped waiting for it; if it
// is lost, the waiters ask again, and once more when it can no longer
// come); it holds the permit with no further round trip. A slow poll (Config.Poll)
// makes up for a lost message and for a lease that ends with no Release. A
// waiter that stops asking, because its process died, loses its place after
// a few Polls; one that dies just as a permit is handed to it holds it for a
// Lease.
//
// An idle Name costs a few keys that expire, and one that does not: the last
// fencing token, which must outlive everything else for tokens to keep
// growing.
//
// # Tests and testing/synctest
//
// Code can be tested against miniredis (github.com/alicebob/miniredis/v2),
// an embedded Redis, which this package's tests and Examples run on. Turn on
// its ClockTTL(true): without it, miniredis lets keys expire only when the
// test calls FastForward, so a lock's lease would never end.
//
// A Semaphore waits on the network, which a testing/synctest bubble does not
// count as blocked: in a bubble, a goroutine waiting in Acquire keeps the
// bubble's virtual clock from moving, and its polls and the test's own
// sleeps may never come. And a waiter is woken by its client's
// subscription, which every Semaphore and Keyed of the client shares, made
// by the first of them to wait: a wake-up from one made outside the waiter's
// bubble (or in another) is refused by the runtime with a fatal error,
// which ends the program. Test code that waits for permits outside bubbles.
// Calls that need not wait (TryAcquire, an Acquire of a free permit,
// Release) work in a bubble whether the Semaphore was made in it or not,
// and a Semaphore made in a bubble works after it. Calls on one Semaphore or
// Keyed from inside a bubble and from outside it at the same moment may be
// refused by the runtime (a panic): their scripts may share a pipeline,
// which tells each caller on a channel of the caller's making.
//
// To test code with no Redis at all, or waiting in a bubble, have it take an
// interface of its own, with the few methods it calls, and pass it a small
// adapter over a *Semaphore, or in tests over a ctxsync.Semaphore or a fake.
// No other type has a Semaphore's methods (a ctxsync.Semaphore's Acquire
// returns an error alone), and only this package makes a Permit, so the
// interface must speak of what the code does with one:
//
//	type limiter interface {
//		// Acquire returns the function that releases what it took.
//		Acquire(ctx context.Context) (release func(), err error)
//	}
package redissync
