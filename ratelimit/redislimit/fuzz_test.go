package redislimit

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// FuzzLimiterModel drives a Limiter on miniredis, whose clock the script
// moves, and checks every Decision against a token bucket kept as credit: the
// microseconds' worth of tokens it holds, up to the burst's worth, of which
// each event spends a token's worth, a whole number of microseconds. Each step
// is two bytes: an operation (move the clock, ask for events, or Reset the
// key, which fills the bucket) and its argument. The Limiter sends each call
// alone, or in its own round trip under MaxRoundTrips: the same thing to the
// model.
func FuzzLimiterModel(f *testing.F) {
	mini := miniredis.RunT(f)
	client := backend{addr: mini.Addr()}.client(f)
	var runs atomic.Int64
	f.Add(uint8(1), uint8(2), []byte{1, 0, 1, 0, 1, 0, 1, 0, 0, 4, 1, 0, 1, 3})
	f.Add(uint8(2), uint8(0), []byte{1, 0, 1, 0, 0, 3, 1, 0, 0, 1, 1, 0})
	f.Add(uint8(4), uint8(6), []byte{1, 9, 1, 2, 0, 7, 1, 6, 0, 200, 1, 5, 1, 5})
	f.Add(uint8(7), uint8(9), []byte{1, 1, 1, 1, 1, 10, 0, 2, 1, 3})
	f.Add(uint8(0), uint8(12), []byte{1, 0, 1, 0, 3, 0, 1, 0, 1, 0, 1, 0})
	f.Add(uint8(3), uint8(25), []byte{1, 0, 1, 1, 3, 0, 1, 2, 0, 9, 1, 0}) // the empty key
	f.Fuzz(func(t *testing.T, rateB, burstB uint8, script []byte) {
		rate := []float64{1, 3, 7, 1.0 / 3, 6, 333, 1e5, 3e6}[rateB%8]
		burst := 1 + int(burstB%10)
		l, err := New(Config{Client: client, Rate: rate, Burst: burst, MaxRoundTrips: []int{-1, 1}[burstB/10%2],
			Timeout: time.Minute, Prefix: fmt.Sprintf("fuzz%d:", runs.Add(1))})
		require.NoError(t, err)
		key := []string{"k", ""}[burstB/20%2] // "" is a key like any other

		token := max(1, int64(math.Ceil(1e6/rate))) // microseconds
		full := token * int64(burst)
		credit := full
		now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		mini.SetTime(now)
		ctx := context.Background()
		for ; len(script) >= 2; script = script[2:] {
			arg := int64(script[1])
			if script[0]%4 == 3 {
				require.NoError(t, l.Reset(ctx, key))
				credit = full
				continue
			}
			if script[0]%2 == 0 {
				step := arg * token / 4
				now = now.Add(time.Duration(step) * time.Microsecond)
				credit = min(full, credit+step)
				mini.SetTime(now)
				continue
			}
			n := 1 + int(arg)%(burst+1) // burst+1 never fits
			d, err := l.TakeContext(ctx, key, n)
			require.NoError(t, err)
			cost := int64(n) * token
			want := ratelimit.Decision{Limit: burst, Window: time.Duration(full) * time.Microsecond}
			switch {
			case n > burst:
				want.Remaining = int(credit / token)
				want.RetryAfter = -1
				want.ResetAfter = time.Duration(full-credit) * time.Microsecond
			case credit >= cost:
				credit -= cost
				want.Allowed = true
				want.Remaining = int(credit / token)
				want.ResetAfter = time.Duration(full-credit) * time.Microsecond
			default:
				want.Remaining = int(credit / token)
				want.RetryAfter = time.Duration(cost-credit) * time.Microsecond
				want.ResetAfter = time.Duration(full-credit) * time.Microsecond
			}
			require.Equal(t, want, d, "rate %v, burst %d: %d asked with %d µs of credit, token %d µs", rate, burst, n, credit, token)
		}
	})
}
