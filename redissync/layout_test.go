package redissync

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests that reach into Redis go through these, which know both layouts
// of the holders (see scripts.go): a sorted set for N > 1, a string for a
// lock.

// holderEnd returns when id's lease ends on the server's clock, and whether
// id holds a permit at all: in a lock, one whose lease has not ended.
func holderEnd(t testing.TB, s *Semaphore, id string) (time.Time, bool) {
	t.Helper()
	ctx := context.Background()
	if !s.lock {
		end, err := s.client.ZScore(ctx, s.keys[0], id).Result()
		if err == redis.Nil {
			return time.Time{}, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return time.UnixMilli(int64(end)), true
	}
	// In the first form, the end itself (PEXPIRETIME, Redis 7), not TIME
	// plus PTTL: those read the clock at two instants, and a millisecond
	// turning between them puts the end a millisecond early.
	v, err := s.client.Eval(ctx, `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return redis.call('PEXPIRETIME', KEYS[1]) end
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. '@' then
	-- In the second form, a lease that ended is gone, as in the first.
	local e = tonumber(string.sub(v, #ARGV[1] + 2))
	local t = redis.call('TIME')
	if e > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then return e end
end
return -1`,
		s.keys[:1], id).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if v < 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(v), true
}

// setHolderEnd makes id a holder whose lease ends at end, on the server's
// clock: as a script that handed it a permit would.
func setHolderEnd(t testing.TB, s *Semaphore, id string, end time.Time) {
	t.Helper()
	ctx := context.Background()
	var err error
	if s.lock {
		// In the form a script would write: the second while a line exists.
		err = s.client.Eval(ctx, `
if redis.call('EXISTS', KEYS[2]) == 0 then
	return redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
end
return redis.call('SET', KEYS[1], ARGV[1] .. '@' .. ARGV[2], 'PXAT', ARGV[2] + ARGV[3])`,
			s.keys[:2], id, end.UnixMilli(), s.keyTTLArg).Err()
	} else {
		err = s.client.ZAdd(ctx, s.keys[0], redis.Z{Score: float64(end.UnixMilli()), Member: id}).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// dropHolder takes id's permit away behind its holder's back.
func dropHolder(t testing.TB, s *Semaphore, id string) {
	t.Helper()
	ctx := context.Background()
	var err error
	if s.lock {
		err = s.client.Eval(ctx, `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] or (v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. '@') then
	redis.call('DEL', KEYS[1])
end`, s.keys[:1], id).Err()
	} else {
		err = s.client.ZRem(ctx, s.keys[0], id).Err()
	}
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
}
