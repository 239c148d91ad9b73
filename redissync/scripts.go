package redissync

import "github.com/redis/go-redis/v9"

// The state of a name, all under one hash tag so that Redis Cluster keeps it
// on one node, and each change is one script, so atomic:
//
//	KEYS[1] holders  sorted set: acquisition id -> end of its lease (ms, Redis clock)
//	KEYS[2] queue    sorted set: waiter id -> place in line
//	KEYS[3] qexp     sorted set: waiter id -> when its entry lapses (ms)
//	KEYS[4] seq      the last fencing token; never expires
//	KEYS[5] qseq     the last place in line given
//
// Times come from TIME on the server, never from the callers' clocks. The
// scripts are short on the way of an uncontended lock: it is the latency.
const prelude = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- sweep drops the leases that have ended and the waiters that stopped
-- renewing their place; it returns how many went.
local function sweep()
	local gone = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
	local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
	if #dead > 0 then
		for _, id in ipairs(dead) do redis.call('ZREM', KEYS[2], id) end
		redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
	end
	return gone + #dead
end

-- notify tells the waiters that may now take a permit, and only them.
local function notify(n, channel)
	local free = n - redis.call('ZCARD', KEYS[1])
	if free > 0 then
		local ids = redis.call('ZRANGE', KEYS[2], 0, free - 1)
		if #ids > 0 then
			redis.call('PUBLISH', channel, table.concat(ids, ' '))
		end
	end
end

-- keep makes key i outlive every entry it holds; it never shortens a time
-- to live that a process with a longer lease set.
local function keep(ttl, i)
	if redis.call('PTTL', KEYS[i]) < ttl then
		redis.call('PEXPIRE', KEYS[i], ttl)
	end
end
`

// acquireScript grants a permit to ARGV[3] if one is free and no waiter is
// ahead of it in line; otherwise, if ARGV[4] (the entry's time to live, ms)
// is above 0, it puts it in line or renews its place.
// ARGV: n, lease ms, id, entry ttl ms, channel, key ttl ms.
// Reply: {1, token, lease ms} or {0, place in line or -1, ms until the first
// lease ends or -1}.
var acquireScript = redis.NewScript(prelude + `
local n = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local id = ARGV[3]
local ttl = tonumber(ARGV[6])
local swept = sweep()
local free = n - redis.call('ZCARD', KEYS[1])
local rank = redis.call('ZRANK', KEYS[2], id)
local ok
if rank then ok = rank < free else ok = free > 0 and redis.call('ZCARD', KEYS[2]) < free end
if ok then
	local token = redis.call('INCR', KEYS[4])
	redis.call('ZADD', KEYS[1], now + lease, id)
	keep(ttl, 1)
	if rank then
		redis.call('ZREM', KEYS[2], id)
		redis.call('ZREM', KEYS[3], id)
	end
	if swept > 0 then notify(n, ARGV[5]) end
	return {1, token, lease}
end
if swept > 0 then notify(n, ARGV[5]) end
local wait = tonumber(ARGV[4])
if wait > 0 then
	if not rank then
		redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[5]), id)
		rank = redis.call('ZCARD', KEYS[2]) - 1
	end
	redis.call('ZADD', KEYS[3], now + wait, id)
	keep(ttl, 2)
	keep(ttl, 3)
	keep(ttl, 5)
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local untilFree = -1
if #first > 0 then untilFree = tonumber(first[2]) - now end
return {0, rank or -1, untilFree}
`)

// releaseScript gives up ARGV[2]'s permit and its place in line, whichever
// it has, and tells the waiters that may now go.
// ARGV: n, id, channel. Reply: 1 if it held a permit whose lease had not
// ended, else 0.
var releaseScript = redis.NewScript(prelude + `
local swept = sweep()
local held = redis.call('ZREM', KEYS[1], ARGV[2])
local queued = redis.call('ZREM', KEYS[2], ARGV[2])
if queued > 0 then redis.call('ZREM', KEYS[3], ARGV[2]) end
if held + queued + swept > 0 then notify(tonumber(ARGV[1]), ARGV[3]) end
return held
`)

// renewScript extends ARGV[1]'s lease to ARGV[2] ms from now, if it has not
// ended. ARGV: id, lease ms, key ttl ms. Reply: 1 if renewed, 0 if gone.
var renewScript = redis.NewScript(prelude + `
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not held or tonumber(held) <= now then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
keep(tonumber(ARGV[3]), 1)
return 1
`)
