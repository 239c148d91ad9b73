package redislimit

import (
	"fmt"
	"math"
	"strconv"
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
// bucket, and so is a value of another type (a hash, say), whose GET fails
// with WRONGTYPE (pcall: the error is a table, not a number), and which a
// grant's SET replaces: with call, the script would fail at every call, and
// the key follow the Policy for good; a time further ahead than an empty
// bucket's (a server's clock set back, or another program's value) is an
// empty bucket, which refills at the rate from now rather than when the
// clock catches up.
var gcra = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call("TIME")
local now = t[1] * 1000000 + t[2]
local tat = tonumber(redis.pcall("GET", KEYS[1]))
if not tat or tat ~= tat or tat < now then tat = now end
if tat > now + tonumber(ARGV[1]) then tat = now + tonumber(ARGV[1]) end
local new_tat = tat + ARGV[2]
if new_tat - now > tonumber(ARGV[1]) then return now - tat - 1 end
redis.call("SET", KEYS[1], string.format("%.0f", new_tat), "PX", math.ceil((new_tat - now) / 1000))
return new_tat - now
`)

// gcraAll is gcra for several limits of one key, all or nothing: KEYS are
// the keys of the limits, and ARGV their tolerances and increments in turn.
// It reads every limit first, and writes only if each has room: a limit with
// room is never charged for events that another refused. It returns, for
// each limit, what gcra would: on a grant, each limit's debt after it (at
// least 1); on a refusal, minus one minus each limit's debt, for every limit
// alike, so that the sign of any one says which.
var gcraAll = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call("TIME")
local now = t[1] * 1000000 + t[2]
local tats, out, ok = {}, {}, true
for i = 1, #KEYS do
  local tol = tonumber(ARGV[2 * i - 1])
  local tat = tonumber(redis.pcall("GET", KEYS[i]))
  if not tat or tat ~= tat or tat < now then tat = now end
  if tat > now + tol then tat = now + tol end
  tats[i] = tat
  if tat + ARGV[2 * i] - now > tol then ok = false end
end
for i = 1, #KEYS do
  if ok then
    local new_tat = tats[i] + ARGV[2 * i]
    redis.call("SET", KEYS[i], string.format("%.0f", new_tat), "PX", math.ceil((new_tat - now) / 1000))
    out[i] = new_tat - now
  else
    out[i] = now - tats[i] - 1
  end
end
return out
`)

// maxTolerance bounds the time to refill, in microseconds, as TokenBucket's
// does: every time the script computes stays a whole number far below 2^53,
// exact in Lua's doubles.
const maxTolerance = 1 << 47

// A limit is the rate and burst of one limit of every key, as the script
// sees them.
type limit struct {
	burst     int
	rate      float64
	interval  float64 // microseconds per token: a whole number
	tolerance float64 // microseconds to refill from empty: interval × burst, a whole number
	tolArg    string  // tolerance, for the script
}

// newLimit returns the limit of rate and burst, or why not if refilling it
// would take too long for the script's numbers: a phrase for Config's error,
// which names the fields.
func newLimit(rate float64, burst int) (limit, string) {
	// A token costs a whole number of microseconds, rounded up, and the
	// burst that many times over: with a fraction, each event's increment
	// (rounded up, for the script) would add up to more than the tolerance,
	// and a full bucket would refuse the last event of its burst, or at a
	// burst of 1, every event.
	interval := math.Ceil(1e6 / rate)
	tolerance := interval * float64(burst)
	if tolerance > maxTolerance {
		return limit{}, fmt.Sprintf("Rate %v and Burst %d: refilling from empty would take over four years", rate, burst)
	}
	return limit{
		burst:     burst,
		rate:      rate,
		interval:  interval,
		tolerance: tolerance,
		tolArg:    strconv.FormatFloat(tolerance, 'f', -1, 64),
	}, ""
}

// increment is what n events add to the time the script keeps.
func (l *limit) increment(n int) int64 { return int64(l.interval) * int64(n) }

// decode makes a Decision of what the script returned for n events.
func (l *limit) decode(v int64, n int) ratelimit.Decision {
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
func (l *limit) remaining(debt int64) int64 {
	return int64(math.Floor((l.tolerance - float64(debt)) / l.interval))
}

// window is the time the limit takes to refill from empty: the Window of
// its Decisions.
func (l *limit) window() time.Duration { return time.Duration(l.tolerance * 1e3) }

func (l *limit) decision(allowed bool, remaining, retryUs, resetUs int64) ratelimit.Decision {
	d := ratelimit.Decision{
		Allowed:    allowed,
		Limit:      l.burst,
		Window:     l.window(),
		Remaining:  int(max(0, remaining)),
		RetryAfter: time.Duration(retryUs) * time.Microsecond,
		ResetAfter: time.Duration(resetUs) * time.Microsecond,
	}
	if retryUs < 0 {
		d.RetryAfter = ratelimit.Never
	}
	return d
}

// decodeAll makes a Decision of what gcraAll returned for n events: Allowed
// if every limit allowed; Remaining the least of the limits', with the Limit
// and Window of that limit; RetryAfter and ResetAfter the greatest of the
// limits' (Never if any says Never).
func (l *Limiter) decodeAll(vs []int64, n int) (ratelimit.Decision, error) {
	if len(vs) != 1+len(l.more) {
		return ratelimit.Decision{}, fmt.Errorf("redislimit: the script returned %d values for %d limits", len(vs), 1+len(l.more))
	}
	var d ratelimit.Decision
	for i, v := range vs {
		lim := &l.limit
		if i > 0 {
			lim = &l.more[i-1]
		}
		// Every value has the sign of the first: all granted, or none.
		if (v >= 0) != (vs[0] >= 0) {
			return ratelimit.Decision{}, fmt.Errorf("redislimit: the script returned %v: granted by some limits and not others", vs)
		}
		ld := lim.decode(v, n)
		if v < 0 {
			// A limit with room says it could grant now; decode, made for
			// a limit that refused, would say never.
			debt := min(-v-1, int64(lim.tolerance))
			retry := max(0, int64(float64(debt+lim.increment(n))-lim.tolerance))
			ld = lim.decision(false, lim.remaining(debt), retry, debt)
		}
		if i == 0 || ld.Remaining < d.Remaining {
			d.Limit, d.Window, d.Remaining = ld.Limit, ld.Window, ld.Remaining
		}
		switch {
		case d.RetryAfter == ratelimit.Never:
		case ld.RetryAfter == ratelimit.Never:
			d.RetryAfter = ratelimit.Never
		default:
			d.RetryAfter = max(d.RetryAfter, ld.RetryAfter)
		}
		d.ResetAfter = max(d.ResetAfter, ld.ResetAfter)
	}
	d.Allowed = vs[0] >= 0
	if d.Allowed {
		d.RetryAfter = 0
	}
	return d, nil
}
