package redissync

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// tokenStartCheck runs tokenStart, the Lua of a key's first token, on the
// server for the microseconds ARGV[2] to ARGV[3] (by ARGV[4]) of the second
// ARGV[1], and returns the
// microseconds where it differs from the exact floor(µs × 1.024) (computed
// in integers, exact below 2^53), goes below what the milliseconds times
// 1024 (an earlier version's start) give, or fails to grow, with the first
// such: {bad, first µs, got, want}. It returns the start of the second's
// last microsecond too, as the SET writes it.
var tokenStartCheck = `
local sec = ARGV[1]
local bad, first, got, want = 0, -1, 0, 0
local prev = -1
for us = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]) do
	local c = {sec, tostring(us)}
	local t = ` + tokenStart + `
	local x = us * 1024
	local exact = tonumber(sec) * 1024000 + (x - x % 1000) / 1000
	local old = (tonumber(sec) * 1000 + (us - us % 1000) / 1000) * 1024
	if t ~= exact or t < old or t <= prev or t ~= math.floor(t) then
		bad = bad + 1
		if first < 0 then first, got, want = us, t, exact end
	end
	prev = t
end
local c = {sec, '999999'}
return {bad, first, string.format('%d', got), string.format('%d', want), string.format('%d', ` + tokenStart + `)}
`

// TestKeyedTokenStartExact: a key's counter made from the server's clock
// starts at floor(µs × 1.024) exactly, computed with Lua's doubles: never
// below the milliseconds times 1024 (the start of the earlier version, so
// that a counter made by this version after one made by that one, in a
// later millisecond or the same, does not go back), and a microsecond later
// always a token later, from the epoch through today's clock to the last
// second whose tokens stay below 2^53 (in the year 2248).
func TestKeyedTokenStartExact(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	c := b.roomyClient(t)
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	const last = (1<<53 - 1 - 999999*1024/1000) / 1024000 // the last second whose starts are below 2^53
	for _, sec := range []int64{0, 1, now.Unix(), 1 << 31, 1 << 32, last - 1, last} {
		t.Run(strconv.FormatInt(sec, 10), func(t *testing.T) {
			// Every µs of the first, middle and last milliseconds, and
			// every 997th (a prime: each µs within a ms) of the second.
			for _, span := range [][3]int{{0, 2999, 1}, {498000, 501999, 1}, {997000, 999999, 1}, {0, 999999, 997}} {
				r, err := c.Eval(ctx, tokenStartCheck, nil, sec, span[0], span[1], span[2]).Slice()
				if err != nil {
					t.Fatal(err)
				}
				if r[0].(int64) != 0 {
					t.Errorf("µs %d to %d by %d: %d wrong; the first, µs %d: %v, want %v", span[0], span[1], span[2], r[0], r[1], r[2], r[3])
				}
			}
			r, err := c.Eval(ctx, tokenStartCheck, nil, sec, 0, 0, 1).Slice()
			if err != nil {
				t.Fatal(err)
			}
			want := sec*1024000 + 999999*1024/1000
			if r[4] != fmt.Sprint(want) {
				t.Errorf("the start at the second's last µs written %q; want %d", r[4], want)
			}
			if want >= 1<<53 {
				t.Errorf("the start %d at second %d reaches 2^53", want, sec)
			}
		})
	}
}

// TestKeyedTokensFrozenClockRepeat pins what the Keyed doc says of a server
// clock that stands still (miniredis after SetTime): a key's counter lost
// and made again at the same microsecond starts where it did, and the
// next grant repeats the token of the last.
func TestKeyedTokensFrozenClockRepeat(t *testing.T) {
	m := miniredis.RunT(t)
	m.ClockTTL(true)
	m.SetTime(time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.UTC))
	b := backend{name: "miniredis", addr: m.Addr(), mini: m, prefix: "test:"}
	ctx := context.Background()
	k := mustKeyed(t, b.config(b.client(t), "frozen", 1, time.Minute))
	var tokens []int64
	for range 2 {
		p, err := k.TryAcquire(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, p.Token())
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
		m.FlushAll()
	}
	want := int64(1795953600)*1024000 + 123456*1024/1000
	if tokens[0] != want || tokens[1] != want {
		t.Errorf("tokens %v around a FLUSHALL at a clock standing still; want %d twice", tokens, want)
	}
}
