// Package ratelimit limits how often events happen: requests to a service, calls
// to an API with a quota, bytes written to a link.
//
//	TokenBucket           a steady rate with bursts; lock-free, one clock read
//	SlidingWindow         at most limit events in any window, exactly
//	SlidingWindowCounter  about limit events per window, in constant memory
//	All                   several limits at once ("350 per 10 s and 10,000 per
//	                      hour"), taken all or nothing
//	Keyed                 one limiter per key (user, API key, client address)
//	Middleware            net/http middleware with the standard headers
//	Transport             an http.RoundTripper that waits for a limiter, global
//	                      or per host
//
// Every limiter satisfies Limiter: AllowN takes events now or refuses, WaitN
// waits for them, first in, first out. Take says more than AllowN: what
// remains, and when to come back. The subpackage redislimit shares one limit
// among every instance of a service through Redis.
//
// Waiting is exact and cheap to abandon. Only the goroutine at the head of the
// queue sleeps, until the limiter can give it what it asked for; nobody
// reserves events ahead of time, so a waiter whose context ends has nothing to
// give back, and the next one moves up. A wait that cannot end before the
// context's deadline fails at once with ErrWouldExceedDeadline. A wait for more
// than the limiter can ever allow fails at once with ErrExceedsBurst. Both are
// checked again for the waiters queued when a TokenBucket's rate or burst
// changes.
//
// The limiters read the monotonic clock, and inside a testing/synctest bubble
// the bubble's virtual clock, so code that uses them can be tested without
// sleeping. A limiter made outside a bubble works inside one, and one made
// inside keeps working after it; what it kept from the other clock, decades
// apart, it forgets or lets age out. A TokenBucket's time stops about 54 years
// after the process started, which only a bubble that sleeps for decades
// reaches: from then on it no longer refills.
//
// The limiters count nothing, so that the hot path stays bare. For metrics,
// wrap them with a Tally, which counts the decisions (allowed, refused, waits
// and how they ended) of every limiter it wraps: one Tally can count for all
// the keys of a Keyed, without a label per key.
//
// Bad arguments (a rate that is not above 0, or so slow that refilling a
// bucket would take over four years; a burst or limit below 1; a window not
// above 0; n below 1; a nil limiter) are bugs and panic with a message that
// begins with "ratelimit:", as does the first use of a limiter's zero value.
// ValidateTokenBucket checks a rate and burst without panicking. Windows may
// be as long as math.MaxInt64: times saturate rather than wrap.
package ratelimit
