package redissync

import (
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The state of a name, all under one hash tag so that Redis Cluster keeps it
// on one node, and each change is one script, so atomic:
//
//	KEYS[1] the holders, in one of two layouts (below)
//	KEYS[2] queue    sorted set: waiter id -> place in line
//	KEYS[3] qexp     sorted set: waiter id -> when its entry lapses (ms)
//	KEYS[4] seq      the last fencing token; never expires
//
// A Semaphore of N > 1 keeps its holders in a sorted set, "holders": each
// acquisition id -> the end of its lease (ms, Redis clock). A lock (N = 1)
// keeps its holder in a string under the same name, in one of two forms:
//
//	id       nobody waits: the key expires with the lease (PX)
//	id@end   a line: end is when the lease ends (ms, Redis clock), and the
//	         key outlives the line's keys, even past that end
//
// So the key is absent only when the lock is free and nobody waits: a free
// lock is taken by a SET NX alone, and a lock in the first form given back
// by a DEL alone, with no look at the line and no clock read. A line that
// empties may leave the second form behind: the scripts read its end, and
// the next grant writes the first. The lock's calls (SET, INCR; GET, DEL)
// are fewer and cheaper than the sorted set's (TIME, EXISTS, INCR, ZADD,
// PEXPIRE; ZREM, ZCARD), and a lock is most of the use.
// Semaphores of one Name must agree on N. Where they do not (a deploy that
// changes N from 1 to 2, say), the one key keeps them from holding at once:
// a script of one layout finds the other's key held (a SET NX fails) or of
// the wrong type (an error, ErrUnavailable), never free.
//
// An id is "tag/lease/n": tag names the Semaphore that made it (its waiters
// are told on the channel prefix{name}:wake:tag) and lease is the Lease it
// asked for, in ms, which a permit handed to it by another process's script
// gets. Another id (the tests make some) takes the caller's Lease, and is
// told nothing.
//
// Times come from the server (TIME, and key expiry), never from the callers'
// clocks.
//
// Every call into Redis from a script costs about as much as the script's
// own start, so the scripts make few, and the sweeps run only where a line
// exists or the permits are all held.
//
// A script reads the clock, if it needs it, only after its fast way out,
// and defines the functions below after that too (in Lua, each run makes
// each one anew).
const clock = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// linePrelude defines the functions both layouts share: the line, and the
// handing of free permits to its head. It uses the layout's live, grant and
// kept, which setPrelude or lockPrelude define before it.
const linePrelude = `
-- parse returns the tag and the lease of an id, or nil and dflt (for an id
-- not of ours, or one whose lease is not from 1 ms to a year).
local function parse(id, dflt)
	local tag, l = string.match(id, '^(%x+)/(%d+)/')
	l = tonumber(l)
	if not l or l < 1 or l > 31536000000 then return nil, dflt end
	return tag, l
end

-- zrem removes the members of list from key i, a thousand at a time (unpack
-- is bounded by Lua's stack).
local function zrem(i, list)
	for j = 1, #list, 1000 do
		redis.call('ZREM', KEYS[i], unpack(list, j, math.min(j + 999, #list)))
	end
end

-- sweepLine drops the waiters that stopped renewing their place from a line
-- of queued, and returns the length left.
local function sweepLine(queued)
	local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
	if #dead == 0 then return queued end
	zrem(2, dead)
	zrem(3, dead)
	return redis.call('ZCARD', KEYS[2])
end

-- handoff grants the free permits to the waiters at the head of the line, in
-- order, each for the lease it asked for, and tells each on its Semaphore's
-- channel, "now lease id:token": a waiter holds its permit without another
-- round trip. held is what live returned. It returns how many it granted,
-- and the token it gave me, if any. The grants to the waiters of the
-- caller's own Semaphore (tagged local) are not published but added to out,
-- as id, lease, token: the caller tells them itself, sooner. ids, if given,
-- is the head of the line, read already: the waiters to grant.
local function handoff(n, held, lease, ttl, wake, me, localTag, out, ids)
	if held >= n then return 0 end
	ids = ids or redis.call('ZRANGE', KEYS[2], 0, n - held - 1)
	if #ids == 0 then return 0 end
	local longest, mine = ttl, nil
	for _, id in ipairs(ids) do
		local tag, l = parse(id, lease)
		local token = redis.call('INCR', KEYS[4])
		if id == me then mine = token end
		grant(id, l)
		if tag and tag == localTag then
			out[#out + 1] = id
			out[#out + 1] = l
			out[#out + 1] = token
		elseif tag and id ~= me then
			-- '%d': a number joined by '..' has 14 digits at most.
			redis.call('PUBLISH', wake .. tag, string.format('%d %d %s:%d', now, l, id, token))
		end
		longest = math.max(longest, 2 * l + 1000)
	end
	zrem(2, ids)
	zrem(3, ids)
	kept(longest, held == 0)
	return #ids, mine
end
`

// setPrelude defines the holders of a Semaphore of N > 1: a sorted set.
const setPrelude = `
-- keep makes key i outlive every entry it holds: ttl is twice the longest an
-- entry lives, and the key's time to live is raised back to it once half
-- gone (rarely, then), or at once for a key just made. It never shortens a
-- time to live that a process with a longer lease set.
local function keep(ttl, i, fresh)
	if fresh or redis.call('PTTL', KEYS[i]) < ttl / 2 then
		redis.call('PEXPIRE', KEYS[i], ttl)
	end
end

-- live returns how many holders have a lease that has not ended, and drops
-- the others if that leaves a permit free (else they do no harm yet).
local function live(n)
	local held = redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
	if held < n then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) end
	return held
end

-- grant makes id a holder for a lease of l ms from now.
local function grant(id, l)
	redis.call('ZADD', KEYS[1], now + l, id)
end

-- kept keeps the holders' key after grants: ttl as keep's, fresh if the key
-- was empty before.
local function kept(ttl, fresh)
	keep(ttl, 1, fresh)
end

-- holds reports whether id holds a permit whose lease has not ended.
local function holds(id)
	local score = redis.call('ZSCORE', KEYS[1], id)
	return score and tonumber(score) > now
end

-- guard has nothing to do: the holders' key is kept by keep.
local function guard(ttl) end

-- untilFree returns the ms until the first lease ends, or -1.
local function untilFree()
	local first = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
	if #first > 0 then return tonumber(first[2]) - now end
	return -1
end
`

// lockPrelude defines the holder of a lock: a string, "id" or "id@end".
const lockPrelude = `
-- holder returns the holder's id and the end of its lease (nil in the first
-- form, whose key ends with it), or nil if no lease is under way.
local function holder()
	local v = redis.call('GET', KEYS[1])
	if not v then return nil end
	local id, e = string.match(v, '^(.*)@(%d+)$')
	if not id then return v, nil end
	e = tonumber(e)
	if e > now then return id, e end
	return nil
end

local function live(n)
	if holder() then return 1 end
	return 0
end

local function grant(id, l)
	redis.call('SET', KEYS[1], id, 'PX', l)
end

-- guard puts the holder's key in the second form, if it is not, and makes it
-- outlive the line's keys, which have just been given ttl.
local function guard(ttl)
	local v = redis.call('GET', KEYS[1])
	if not v then return end
	local left = redis.call('PTTL', KEYS[1])
	if not string.find(v, '@', 1, true) then
		redis.call('SET', KEYS[1], v .. '@' .. (now + left), 'PX', math.max(left, ttl))
	elseif left < ttl then
		redis.call('PEXPIRE', KEYS[1], ttl)
	end
end

-- kept guards the key after a grant if a line is left, for as long as the
-- line's keys live at least (1 ms more: PTTL rounds down). A process of a
-- longer Poll or Lease may have made them live longer than ttl.
local function kept(ttl, fresh)
	local line = redis.call('PTTL', KEYS[2])
	if line ~= -2 then guard(math.max(ttl, line + 1)) end
end

local function holds(id)
	return holder() == id
end

local function untilFree()
	local id, e = holder()
	if not id then return -1 end
	if e then return e - now end
	return redis.call('PTTL', KEYS[1])
end
`

// The scripts of each layout: acquire, release and renew.
type scripts struct {
	acquire, release, renew *redis.Script
}

var (
	setScripts  = scripts{setAcquire, setRelease, setRenew}
	lockScripts = scripts{lockAcquire, lockRelease, lockRenew}
)

// The acquire script first hands the free permits to the waiters at the head
// of the line; then it answers ARGV[3] with its permit if it holds one
// (handed to it: only if ARGV[7] is "1", an id that asked before), or grants
// it one if one is free and nobody is in line; otherwise, if ARGV[4] (the
// entry's time to live, ms) is above 0, it puts it in line or renews its
// place.
//
// A waiter that asks for a permit handed to it by an earlier script gets a
// new fencing token: the one handed to it was sent only by a message, which
// it missed or declined, so no holder ever used it; the new one is as good,
// the permit having been its own since. Its lease is renewed whole.
//
// ARGV: n, lease ms, id, entry ttl ms, wake channel prefix, key ttl ms,
// asked before (1 or 0).
// Reply: the token of a permit it granted now, for the whole lease (a bare
// integer, the most common reply, made and read the fastest); {1, token,
// lease ms left, now} for a permit handed before; or {0, place in line or
// -1, ms until the first lease ends or -1, now}.
//
// Each layout has its fast way, for a Name nobody holds and nobody waits
// for; acquireBody is the rest, the same in both.
var (
	setAcquire = newScript(clock + `
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 then
	local token = redis.call('INCR', KEYS[4])
	redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
	redis.call('PEXPIRE', KEYS[1], ARGV[6])
	return token
end
local queued = redis.call('ZCARD', KEYS[2])
local held = false
` + setPrelude + linePrelude + acquireBody)

	// The lock's fast way is a SET NX: its key is absent only when the
	// lock is free and nobody waits.
	lockAcquire = newScript(`
if redis.call('SET', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[2]) then
	return redis.call('INCR', KEYS[4])
end
local queued = redis.call('ZCARD', KEYS[2])
local held = false
` + clock + lockPrelude + linePrelude + acquireBody)
)

// The lock's fast ways as scripts of their own, which declare only the keys
// they touch: a script's every key costs its call, and these two are most of
// a lock's calls when nobody waits. A process runs them until one finds the
// lock held or waited for, then the full scripts until one finds it free.
//
// lockTake: KEYS holders, seq; ARGV id, lease ms. Reply: the token, or 0
// when the key is there (held, or a line).
// lockGive: KEYS holders; ARGV id. Reply: 1 if it gave the lock back, or 0
// when the key is not the id's first form (a line, or a lease ended).
var (
	lockTake = newScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return redis.call('INCR', KEYS[2])
end
return 0
`)

	lockGive = newScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	redis.call('DEL', KEYS[1])
	return 1
end
return 0
`)
)

// acquireBody begins with queued, the length of the line, and held, how
// many permits are held if known (else false).
const acquireBody = `
local n = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local id = ARGV[3]
local ttl = tonumber(ARGV[6])
local again = ARGV[7] == '1'
if queued > 0 then
	queued = sweepLine(queued)
	held = live(n)
	local granted, mine = handoff(n, held, lease, ttl, ARGV[5], id, nil, nil)
	if mine then
		return {1, mine, lease, now}
	end
	-- The line may have emptied: a free permit left is the caller's.
	queued = queued - granted
	held = held + granted
end
if again and holds(id) then
	-- Handed to it: a waiter that missed or declined the message. Its lease
	-- starts again from now: what is left of the one held for it may be too
	-- little to prove, or to renew in time.
	grant(id, lease)
	kept(ttl, false)
	return {1, redis.call('INCR', KEYS[4]), lease, now}
end
if queued == 0 then
	if not held then held = live(n) end
	if held < n then
		local token = redis.call('INCR', KEYS[4])
		grant(id, lease)
		kept(ttl, held == 0)
		return token
	end
end
local rank = false
if again and queued > 0 then rank = redis.call('ZRANK', KEYS[2], id) end
local wait = tonumber(ARGV[4])
if wait > 0 then
	local fresh = queued == 0
	if not rank then
		-- At the tail: one place after the last.
		local place = 1
		if not fresh then
			local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
			if #last > 0 then place = tonumber(last[2]) + 1 end
		end
		redis.call('ZADD', KEYS[2], place, id)
		rank = queued
	end
	redis.call('ZADD', KEYS[3], now + wait, id)
	-- The line and its lapses are made, emptied and kept together.
	if fresh or redis.call('PTTL', KEYS[2]) < ttl / 2 then
		redis.call('PEXPIRE', KEYS[2], ttl)
		redis.call('PEXPIRE', KEYS[3], ttl)
		guard(ttl)
	end
end
local free = -1
if rank and rank < n then free = untilFree() end
return {0, rank or -1, free, now}
`

// The release script gives up ARGV[2]'s permit and its place in line,
// whichever it has, and hands the free permits to the waiters next in line.
//
// ARGV[6] is "1" when the caller holds a permit whose lease it can still
// prove (so it has not ended on the server either): then the sorted set's
// permit is taken out with no reading of the clock nor of its lease's end.
// The lock needs no such hint: its holder's key, in the first form, is gone
// when its lease is. An uncontended Release is then two calls (the set:
// ZREM, ZCARD; the lock: GET, DEL).
//
// ARGV: n, id, wake channel prefix, lease ms, key ttl ms, proven (1 or 0).
// Reply: 1 if it held a permit whose lease had not ended, else 0; or, with a
// line, {that, now, then id, lease ms, token of each permit handed to a
// waiter of the caller's Semaphore}.
var (
	setRelease = newScript(`
local id = ARGV[2]
local held = 0
local now = 0
local function readClock()
	local t = redis.call('TIME')
	now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
if ARGV[6] == '1' then
	held = redis.call('ZREM', KEYS[1], id)
else
	readClock()
	local score = redis.call('ZSCORE', KEYS[1], id)
	if score then
		redis.call('ZREM', KEYS[1], id)
		if tonumber(score) > now then held = 1 end
	elseif redis.call('ZREM', KEYS[2], id) > 0 then
		redis.call('ZREM', KEYS[3], id)
	end
end
local queued = redis.call('ZCARD', KEYS[2])
if queued == 0 then return held end
if now == 0 then readClock() end
` + setPrelude + releaseBody)

	// The lock's Release of a holder in the first form is a DEL: nobody
	// waits. Otherwise it reads the head of the line: the lock it gave up
	// is free, and a head whose place has not lapsed (the common case)
	// takes it with no sweep of the line. Places lapsed further back are
	// swept by the next Acquire.
	lockRelease = newScript(`
local id = ARGV[2]
local v = redis.call('GET', KEYS[1])
if v == id then
	redis.call('DEL', KEYS[1])
	return 1
end
` + clock + lockPrelude + linePrelude + `
local held = 0
if v and string.sub(v, 1, #id + 1) == id .. '@' then
	redis.call('DEL', KEYS[1])
	if tonumber(string.sub(v, #id + 2)) > now then held = 1 end
elseif redis.call('ZREM', KEYS[2], id) > 0 then
	redis.call('ZREM', KEYS[3], id)
end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)
if #head == 0 then return held end
local out = {held, now}
if held == 0 and live(1) == 1 then return out end
local lapse = redis.call('ZSCORE', KEYS[3], head[1])
if lapse and tonumber(lapse) <= now then
	if sweepLine(1) == 0 then return out end
	head = nil
end
handoff(1, 0, tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[3], nil, parse(id, 0), out, head)
return out
`)
)

const releaseBody = linePrelude + `
local out = {held, now}
if sweepLine(queued) > 0 then
	local n = tonumber(ARGV[1])
	handoff(n, live(n), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[3], nil, parse(id, 0), out)
end
return out
`

// The renew script extends ARGV[1]'s lease to ARGV[2] ms from now, if it has
// not ended. ARGV: id, lease ms, key ttl ms. Reply: 1 if renewed, 0 if gone.
var (
	setRenew = newScript(clock + setPrelude + `
if not holds(ARGV[1]) then return 0 end
grant(ARGV[1], tonumber(ARGV[2]))
keep(tonumber(ARGV[3]), 1)
return 1
`)

	lockRenew = newScript(`
local id = ARGV[1]
local v = redis.call('GET', KEYS[1])
if v == id then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	return 1
end
if not v or string.sub(v, 1, #id + 1) ~= id .. '@' then return 0 end
` + clock + `
if tonumber(string.sub(v, #id + 2)) <= now then return 0 end
local l = tonumber(ARGV[2])
redis.call('SET', KEYS[1], id .. '@' .. (now + l), 'PX', math.max(redis.call('PTTL', KEYS[1]), l))
return 1
`)
)

// The keyed scripts (see Keyed) are the scripts above with a fencing token
// counter that expires: a process locking per account would otherwise leave
// a key in Redis for every account ever locked. When the counter is gone
// (never made, expired, or flushed), the next token starts from the
// server's clock, in microseconds, times 1.024 (rounded down): the
// milliseconds times 1024, plus the microseconds within the millisecond
// spread over the 1024. That is above every token given before, as long as
// no key was granted more than 1024 times a millisecond on average (a grant
// takes a round trip, tens of microseconds at best) and the server's clock
// did not step back; a counter made again within the millisecond of the
// last (a FLUSHALL just after a grant) counts from a later microsecond, not
// from the same start. A process of v0.1.0 sharing the key makes it from
// the milliseconds times 1024, which this start is never below: its making
// within the millisecond after one of this version goes back by up to 1023.
// Two makings within one microsecond (a server clock standing still, as
// miniredis's after SetTime) start alike. 2^53 is reached in the year 2248.
// The counter lives twice the Lease and a second from its making, whatever
// its use: its making costs a TIME and a SET.
var (
	keyedSetScripts  = scripts{keyedScript(setAcquire, 4, 2), keyedScript(setRelease, 4, 4), setRenew}
	keyedLockScripts = scripts{keyedScript(lockAcquire, 4, 2), keyedScript(lockRelease, 4, 4), lockRenew}
	keyedLockTake    = keyedScript(lockTake, 2, 2)
)

// tokenStart is the Lua expression of a key's first token from c, the
// reply of a TIME (seconds, microseconds): the microseconds times 1.024,
// rounded down. Until the year 2248 every value in it but the quotient is
// an integer below 2^53, so exact in a double; the quotient of an integer
// by 1000 is rounded once, and its fraction (0 to 0.999) is too far from 1
// for that to reach the next integer: the start is exact, and never below
// the milliseconds times 1024.
const tokenStart = `tonumber(c[1]) * 1024000 + math.floor(tonumber(c[2]) * 1024 / 1000)`

// keyedScript returns sc with every INCR of KEYS[seq] made a call to
// nextToken, which counts from the clock as said above; ARGV[lease] is the
// Lease in ms.
func keyedScript(sc *redis.Script, seq, lease int) *redis.Script {
	src := scriptSource[sc]
	incr := fmt.Sprintf("redis.call('INCR', KEYS[%d])", seq)
	if !strings.Contains(src, incr) {
		panic("redissync: bug: a keyed script counts no token")
	}
	return redis.NewScript(fmt.Sprintf(`
local function nextToken()
	local t = redis.call('INCR', KEYS[%[1]d])
	if t == 1 then
		local c = redis.call('TIME')
		t = %[3]s
		redis.call('SET', KEYS[%[1]d], string.format('%%d', t), 'PX', 2 * tonumber(ARGV[%[2]d]) + 1000)
	end
	return t
end
`, seq, lease, tokenStart) + strings.ReplaceAll(src, incr, "nextToken()"))
}

// scriptSource holds the source of each script newScript made, which
// keyedScript rewrites: go-redis's Script does not give it back.
var scriptSource = map[*redis.Script]string{}

func newScript(src string) *redis.Script {
	sc := redis.NewScript(src)
	scriptSource[sc] = src
	return sc
}
