package redislimit

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// Policy is what a Limiter does when Redis fails to answer.
type Policy int

const (
	// FailOpen allows the events: better to exceed the limit for a while
	// than to stop the service.
	FailOpen Policy = iota
	// FailClosed refuses the events: the limit protects something that
	// must not be overrun.
	FailClosed
	// FailLocal decides with an in-process token bucket per key, at
	// Config.LocalShare of the rate and burst: each instance keeps to its
	// share of the limit until Redis is back. Limiter.Reset refills a key's
	// in-process bucket too, whatever Redis answers.
	FailLocal
)

// String returns "fail-open", "fail-closed" or "fail-local".
func (p Policy) String() string {
	switch p {
	case FailOpen:
		return "fail-open"
	case FailClosed:
		return "fail-closed"
	case FailLocal:
		return "fail-local"
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// NoLimit, as Config.MaxRoundTrips, sets no bound on the round trips under
// way. Like every -1 of the library's configurations, it means "none".
const NoLimit = -1

// Config configures a Limiter.
type Config struct {
	// Client is the Redis client. Required.
	Client redis.UniversalClient

	// Rate is the number of events per second allowed, for each key.
	// Required, above 0 and finite: math.Inf(1), which a
	// ratelimit.TokenBucket takes as no limit on the rate, is refused. A
	// token costs a whole number of microseconds,
	// rounded up, so the rate kept is a million divided by a whole number:
	// a rate whose token is not a whole number of microseconds is rounded
	// down to the next such rate. That is a little for slow rates (2.999994
	// for 3), but more as the token nears a microsecond: 110,000 a second is
	// kept as 100,000, anything between half a million and a million as
	// half a million, and anything above a million as a million. (The state
	// is a time in whole microseconds of the server's clock, exact in the
	// script's numbers.) It is never exceeded.
	Rate float64

	// Burst is the most events allowed at once. Required, at least 1.
	Burst int

	// Prefix starts every key; the default is "ratelimit:".
	Prefix string

	// Timeout bounds each call's wait for Redis, the wait for a round trip
	// (see MaxRoundTrips) included. 0 means 100 milliseconds. It holds
	// whatever the client's own timeouts, and so does a call's ctx, ended by
	// its deadline or cancelled. A client with Options.ContextTimeoutEnabled
	// ends its round trips at the Timeout too, and costs less; with another
	// client, a round trip that its caller stopped waiting for runs on until
	// the client's ReadTimeout.
	Timeout time.Duration

	// Policy is what to do when Redis fails to answer in time; the default
	// is FailOpen.
	Policy Policy

	// LocalShare is the share of Rate and Burst that FailLocal's in-process
	// bucket allows, between 0 and 1: with n instances, 1/n keeps the service
	// to the limit. 0 means 1. The local burst is rounded down, but to at
	// least 1: with a share of the Burst below one event, each instance may
	// allow one event at once when Redis fails. New refuses a share whose
	// local bucket would take over four years to refill (a monthly quota of
	// one event shared by 100 instances, say); other Policies ignore it.
	// The in-process buckets keep an idle key until it has refilled, and
	// at most 100 000 keys: past that, the least recently used are
	// forgotten, and full again when they come back.
	LocalShare float64

	// MaxRoundTrips bounds the round trips to Redis that the Limiter has
	// under way at once: its commands (a run of the script, Reset's DEL) and
	// its pipelines of them. A call made while that many are under way waits,
	// and as soon as one ends, the calls waiting go together in a pipeline:
	// under load, one round trip carries many decisions, which spares the
	// server and the client a system call for each. The Timeout bounds each
	// call's wait, queue included. 0 means 4; NoLimit (-1) means no bound: each call
	// makes its own round trip at once, on a connection of its own (and
	// waits for one if the client's pool has none free).
	//
	// A round trip keeps its place until it ends, even when its callers
	// have stopped waiting for it: a Redis that stalls never has more than
	// MaxRoundTrips round trips of the Limiter under way. Without
	// Options.ContextTimeoutEnabled on the client, a round trip may outlast
	// the Timeout (up to the client's ReadTimeout), and the calls made
	// meanwhile wait in the queue, then follow the Policy at their Timeout.
	// A client with no ReadTimeout (-1 or -2) may then keep those places
	// until the operating system gives up on the connection: minutes.
	//
	// What the client adds to a round trip is not counted apart: a command
	// that needs a new connection first sends, on it, the handshake of the
	// client (HELLO, then CLIENT SETINFO in a pipeline of its own), and
	// go-redis passes those through the client's hooks too, inside the
	// hook's call for the command. A hook that counts every command and
	// pipeline under way sees them as more (2 at once for a MaxRoundTrips of
	// 1, as the first command dials); they are not, as they go on the
	// command's own connection, before it. Likewise the client's retries
	// (Options.MaxRetries) and, on Redis Cluster, its redirections (MOVED,
	// ASK) repeat a round trip in place. A ClusterClient splits a pipeline by
	// node and sends the parts at once: a pipeline whose keys fall on
	// several nodes is one round trip to each of them, and the bound holds
	// for each node.
	//
	// A pipeline serves many calls, so it carries none of their contexts:
	// client hooks see it without their values (a tracing span, say). Set
	// NoLimit if every command must carry its caller's context.
	MaxRoundTrips int

	// OnError, if not nil, is told of every Redis failure, with the key.
	OnError func(key string, err error)

	// Limits are more limits of every key, besides Rate and Burst: "350 per
	// 10 s and 10,000 per hour" is Rate 35 and Burst 350, with Limits
	// {{Rate: 10000.0 / 3600, Burst: 10000}}. Events are allowed only when
	// every limit allows them, and then taken from all; refused, they are
	// taken from none. One script checks and takes them all, in one round
	// trip. Each limit keeps its state in a key of its own, the Limiter's
	// Key followed by ":2", ":3" and so on, in the same hash slot. A call
	// for more events than the least Burst fails as one for more than Burst
	// does. With FailLocal, each limit has its in-process bucket, at
	// LocalShare of its rate and burst, taken from all or none, as
	// ratelimit.All does.
	Limits []Limit
}

// A Limit is one more limit of every key of a Limiter: Rate events per
// second, in bursts of at most Burst, as Config's own Rate and Burst (and
// bound as they are: Rate above 0 and finite, Burst at least 1).
type Limit struct {
	Rate  float64
	Burst int
}

// New returns a Limiter. It returns an error for a bad Config: a nil Client, a
// Rate not above 0 or not finite, a Burst below 1, a Rate and Burst that take over four years
// to refill (and the same of each of Limits), a negative Timeout, a LocalShare outside 0 to 1 (or, with
// FailLocal, one whose local bucket would take over four years to refill), an
// unknown Policy, a MaxRoundTrips below -1, or, for a *redis.ClusterClient
// with Limits, a Prefix that empties the keys' hash tag (its first "{"
// followed at once by "}").
func New(cfg Config) (*Limiter, error) {
	bad := func(format string, args ...any) (*Limiter, error) {
		return nil, fmt.Errorf("redislimit: bad Config: "+format, args...)
	}
	switch {
	case cfg.Client == nil:
		return bad("Client is required")
	case !(cfg.Rate > 0) || math.IsInf(cfg.Rate, 1):
		return bad("Rate is %v; it must be above 0 and finite", cfg.Rate)
	case cfg.Burst < 1:
		return bad("Burst is %d; it must be at least 1", cfg.Burst)
	case cfg.Timeout < 0:
		return bad("Timeout is negative")
	case cfg.LocalShare < 0 || cfg.LocalShare > 1 || math.IsNaN(cfg.LocalShare):
		return bad("LocalShare is %v; it must be between 0 and 1", cfg.LocalShare)
	case cfg.Policy < FailOpen || cfg.Policy > FailLocal:
		return bad("unknown Policy %d", cfg.Policy)
	case cfg.MaxRoundTrips < NoLimit:
		return bad("MaxRoundTrips is %d; it must be at least 1, or 0 or -1", cfg.MaxRoundTrips)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "ratelimit:"
	}
	if _, cluster := cfg.Client.(*redis.ClusterClient); cluster && len(cfg.Limits) > 0 && emptiesTag(cfg.Prefix) {
		// Every call would fail with CROSSSLOT, and follow the Policy.
		return bad("Prefix %q empties the keys' hash tag: on Redis Cluster a key's Limits would fall in different slots", cfg.Prefix)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 100 * time.Millisecond
	}
	if cfg.LocalShare == 0 {
		cfg.LocalShare = 1
	}
	if cfg.MaxRoundTrips == 0 {
		cfg.MaxRoundTrips = 4
	}
	first, why := newLimit(cfg.Rate, cfg.Burst)
	if why != "" {
		return bad("%s", why)
	}
	l := &Limiter{
		client:  cfg.Client,
		limit:   first,
		most:    cfg.Burst,
		prefix:  cfg.Prefix,
		timeout: cfg.Timeout,
		policy:  cfg.Policy,
		onError: cfg.OnError,

		ctxTimeouts: honoursDeadlines(cfg.Client),
	}
	for i, lim := range cfg.Limits {
		if !(lim.Rate > 0) || math.IsInf(lim.Rate, 1) {
			return bad("Limits[%d].Rate is %v; it must be above 0 and finite", i, lim.Rate)
		}
		if lim.Burst < 1 {
			return bad("Limits[%d].Burst is %d; it must be at least 1", i, lim.Burst)
		}
		more, why := newLimit(lim.Rate, lim.Burst)
		if why != "" {
			return bad("Limits[%d]: %s", i, why)
		}
		l.more = append(l.more, more)
		l.most = min(l.most, lim.Burst)
	}
	if cfg.MaxRoundTrips > 0 {
		l.batch.max = cfg.MaxRoundTrips
	}
	if cfg.Policy == FailLocal {
		type share struct {
			rate  float64
			burst int
		}
		var shares []share
		ttl := 10 * time.Minute
		for i, lim := range append([]Limit{{cfg.Rate, cfg.Burst}}, cfg.Limits...) {
			rate, burst := lim.Rate*cfg.LocalShare, max(1, int(float64(lim.Burst)*cfg.LocalShare))
			which := ""
			if i > 0 {
				which = fmt.Sprintf(" (Limits[%d])", i-1)
			}
			// The in-process bucket is built at the first outage, where it
			// must not fail: check now that it can be. Its burst is rounded
			// up to 1, so its refill time may be far longer than Redis's;
			// the same bound keeps its times far inside an int64. The rate
			// may underflow to 0.
			if !(float64(burst)*1e6/rate <= maxTolerance) {
				return bad("LocalShare %v of Rate %v%s: the in-process bucket of FailLocal (%v events per second, burst %d) would take over four years to refill; raise LocalShare or choose another Policy",
					cfg.LocalShare, lim.Rate, which, rate, burst)
			}
			if err := canBuild(rate, burst); err != nil {
				return bad("LocalShare %v of Rate %v%s: the in-process bucket of FailLocal cannot be built: %v", cfg.LocalShare, lim.Rate, which, err)
			}
			// A key forgotten is a bucket full again: keep an idle key as
			// long as its slowest bucket takes to refill (at most four years
			// and a half, far inside a Duration), and the default ten
			// minutes at least.
			ttl = max(ttl, time.Duration(math.Ceil(float64(burst)*1e9/rate))+time.Second)
			shares = append(shares, share{rate, burst})
			if i == 0 || burst < l.localMost {
				l.localMost = burst
			}
		}
		fresh := func() ratelimit.Taker {
			if len(shares) == 1 {
				return ratelimit.NewTokenBucket(shares[0].rate, shares[0].burst)
			}
			buckets := make([]ratelimit.Limiter, len(shares))
			for i, s := range shares {
				buckets[i] = ratelimit.NewTokenBucket(s.rate, s.burst)
			}
			return ratelimit.All(buckets...)
		}
		l.local = ratelimit.NewKeyed(func(string) *localBucket { return newLocalBucket(fresh) },
			ratelimit.KeyedConfig{TTL: ttl})
	}
	return l, nil
}

// canBuild returns the panic of NewTokenBucket(rate, burst) as an error, if
// it panics.
func canBuild(rate float64, burst int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	ratelimit.NewTokenBucket(rate, burst)
	return nil
}
