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
//	KEYS[6] tokens   hash: id -> fencing token, of the permits handed to
//	                 waiters (one that missed the message learns its token
//	                 at its next attempt)
//
// Times come from TIME on the server, never from the callers' clocks.
const prelude = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- sweep drops the leases that have ended and, if there is a line, the
-- waiters that stopped renewing their place; it returns the length of the
-- line.
local function sweep()
	local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
	for _, id in ipairs(gone) do
		redis.call('ZREM', KEYS[1], id)
		redis.call('HDEL', KEYS[6], id)
	end
	local queued = redis.call('ZCARD', KEYS[2])
	if queued == 0 then return 0 end
	local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
	for _, id in ipairs(dead) do
		redis.call('ZREM', KEYS[2], id)
		redis.call('ZREM', KEYS[3], id)
	end
	return queued - #dead
end

-- keep makes key i outlive every entry it holds: ttl is twice the longest an
-- entry lives, and the key's time to live is raised back to it once half
-- gone (rarely, then). It never shortens a time to live that a process with
-- a longer lease set.
local function keep(ttl, i)
	if redis.call('PTTL', KEYS[i]) < ttl / 2 then
		redis.call('PEXPIRE', KEYS[i], ttl)
	end
end

-- handoff grants the free permits to the waiters at the head of the line,
-- in order, and tells them in one message, "now lease id:token ...": a
-- waiter holds its permit without another round trip.
local function handoff(n, lease, channel, ttl)
	local free = n - redis.call('ZCARD', KEYS[1])
	if free <= 0 then return end
	local ids = redis.call('ZRANGE', KEYS[2], 0, free - 1)
	local msg = {now, lease}
	for _, id in ipairs(ids) do
		local token = redis.call('INCR', KEYS[4])
		redis.call('ZADD', KEYS[1], now + lease, id)
		redis.call('HSET', KEYS[6], id, token)
		redis.call('ZREM', KEYS[2], id)
		redis.call('ZREM', KEYS[3], id)
		msg[#msg + 1] = id .. ':' .. token
	end
	keep(ttl, 1)
	keep(ttl, 6)
	redis.call('PUBLISH', channel, table.concat(msg, ' '))
end
`

// acquireScript first hands the free permits to the waiters at the head of
// the line; then it answers ARGV[3] with its permit if it holds one (handed
// to it), or grants it one if one is free and nobody is in line; otherwise,
// if ARGV[4] (the entry's time to live, ms) is above 0, it puts it in line
// or renews its place.
// ARGV: n, lease ms, id, entry ttl ms, channel, key ttl ms.
// Reply: {1, token, lease ms left, now} or {0, place in line or -1, ms until
// the first lease ends or -1, now}.
var acquireScript = redis.NewScript(prelude + `
local n = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local id = ARGV[3]
local ttl = tonumber(ARGV[6])
local queued = sweep()
if queued > 0 then
	handoff(n, lease, ARGV[5], ttl)
	-- The line may have emptied: a free permit left is the caller's.
	queued = redis.call('ZCARD', KEYS[2])
end
local held = redis.call('ZSCORE', KEYS[1], id)
if held then
	-- Handed to it: a waiter that missed the message.
	return {1, tonumber(redis.call('HGET', KEYS[6], id)) or 0, tonumber(held) - now, now}
end
if queued == 0 and redis.call('ZCARD', KEYS[1]) < n then
	-- No token kept: the caller never asks again for this id.
	local token = redis.call('INCR', KEYS[4])
	redis.call('ZADD', KEYS[1], now + lease, id)
	keep(ttl, 1)
	return {1, token, lease, now}
end
local rank = redis.call('ZRANK', KEYS[2], id)
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
return {0, rank or -1, untilFree, now}
`)

// releaseScript gives up ARGV[2]'s permit and its place in line, whichever
// it has, and hands the free permits to the waiters next in line.
// ARGV: n, id, channel, lease ms, key ttl ms. Reply: 1 if it held a permit
// whose lease had not ended, else 0.
var releaseScript = redis.NewScript(prelude + `
local queued = sweep()
local held = redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('HDEL', KEYS[6], ARGV[2])
if queued > 0 then
	if redis.call('ZREM', KEYS[2], ARGV[2]) > 0 then redis.call('ZREM', KEYS[3], ARGV[2]) end
	handoff(tonumber(ARGV[1]), tonumber(ARGV[4]), ARGV[3], tonumber(ARGV[5]))
end
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
