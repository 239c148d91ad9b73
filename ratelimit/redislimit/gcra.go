package redislimit

import (
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// gcra is the script: a token bucket kept as the theoretical arrival time of
// the next event, in microseconds of the server's clock.
//
// KEYS[1] holds the time; ARGV are the tolerance (the burst's worth of
// microseconds) and the increment (n events' worth, a whole number). The
// script returns one integer, the least it can send: the debt after the grant
// (at least 1) if it allows, or minus one minus the debt if it refuses, and
// the caller works out the rest of the decision. It sets the key only when it
// allows, with a time to live of the debt: once the bucket is full again, the
// key is not needed.
//
// Every number is a whole number of microseconds below 2^53, exact in Lua's
// doubles; string.format writes the time without an exponent. A time the
// script did not write is made sane first: not a number (or NaN) is a full
// bucket; a time further ahead than an empty bucket's (a server's clock set
// back, or another program's value) is an empty bucket, which refills at the
// rate from now rather than when the clock catches up.
var gcra = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call("TIME")
local now = t[1] * 1000000 + t[2]
local tat = tonumber(redis.call("GET", KEYS[1]))
if not tat or tat ~= tat or tat < now then tat = now end
if tat > now + tonumber(ARGV[1]) then tat = now + tonumber(ARGV[1]) end
local new_tat = tat + ARGV[2]
if new_tat - now > tonumber(ARGV[1]) then return now - tat - 1 end
redis.call("SET", KEYS[1], string.format("%.0f", new_tat), "PX", math.ceil((new_tat - now) / 1000))
return new_tat - now
`)

// maxTolerance bounds the time to refill, in microseconds, as TokenBucket's
// does: every time the script computes stays a whole number far below 2^53,
// exact in Lua's doubles.
const maxTolerance = 1 << 47

// increment is what n events add to the time the script keeps.
func (l *Limiter) increment(n int) int64 { return int64(l.interval) * int64(n) }

// decode makes a Decision of what the script returned for n events.
func (l *Limiter) decode(v int64, n int) ratelimit.Decision {
	// The script keeps the debt within the tolerance; a reply beyond it
	// (which no version of the script sends) must not overflow below.
	tol := int64(l.tolerance)
	v = max(-tol-1, min(v, tol))
	if v >= 0 {
		return l.decision(true, l.remaining(v), 0, v)
	}
	debt := -v - 1
	retry := int64(float64(debt+l.increment(n)) - l.tolerance)
	return l.decision(false, l.remaining(debt), retry, debt)
}

// remaining is the number of events the bucket holds with debt microseconds
// owed.
func (l *Limiter) remaining(debt int64) int64 {
	return int64(math.Floor((l.tolerance - float64(debt)) / l.interval))
}

func (l *Limiter) decision(allowed bool, remaining, retryUs, resetUs int64) ratelimit.Decision {
	d := ratelimit.Decision{
		Allowed:    allowed,
		Limit:      l.burst,
		Window:     time.Duration(l.tolerance * 1e3),
		Remaining:  int(max(0, remaining)),
		RetryAfter: time.Duration(retryUs) * time.Microsecond,
		ResetAfter: time.Duration(resetUs) * time.Microsecond,
	}
	if retryUs < 0 {
		d.RetryAfter = ratelimit.Never
	}
	return d
}
