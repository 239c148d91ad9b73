package redislimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// TestReview11AgreesWithTokenBucket: the package doc says the Limiter is a
// token bucket "as ratelimit.TokenBucket". At rates whose token is a whole
// number of microseconds (where the two clocks' rounding cannot differ), the
// same sequence of waits and takes gets the same Decisions from both: a
// TokenBucket on a synctest bubble's clock, and a Limiter on miniredis, whose
// clock the test moves in step.
func TestReview11AgreesWithTokenBucket(t *testing.T) {
	b := backends(t)[0]
	c := b.client(t)
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	defer b.mini.SetTime(start)
	for run := range 40 {
		rate := []float64{1, 2, 4, 5, 10, 1000, 1e6}[run%7]
		burst := 1 + run%9
		seed := uint64(run)
		// Every other run has a second limit, slower with a larger burst,
		// against ratelimit.All of two buckets.
		rate2, burst2 := rate/4, burst+1+run%3
		two := run%2 == 1
		t.Run(fmt.Sprintf("rate %v burst %d, second limit %v", rate, burst, two), func(t *testing.T) {
			cfg := Config{Client: c, Rate: rate, Burst: burst, Prefix: fmt.Sprintf("model%d:", run)}
			if two {
				cfg.Limits = []Limit{{Rate: rate2, Burst: burst2}}
			}
			l := newLimiter(t, cfg)
			synctest.Test(t, func(t *testing.T) {
				var tb ratelimit.Taker = ratelimit.NewTokenBucket(rate, burst)
				if two {
					tb = ratelimit.All(tb, ratelimit.NewTokenBucket(rate2, burst2))
				}
				now := start
				b.mini.SetTime(now)
				r := rand.New(rand.NewPCG(seed, 11))
				token := time.Duration(1e6/rate) * time.Microsecond
				for step := range 200 {
					if r.IntN(2) == 0 {
						d := time.Duration(r.Int64N(int64(2*token)/int64(time.Microsecond)+1)) * time.Microsecond
						time.Sleep(d)
						now = now.Add(d)
						b.mini.SetTime(now)
						continue
					}
					n := 1 + r.IntN(burst+1)
					want := tb.Take(n)
					got, err := l.TakeContext(context.Background(), "k", n)
					require.NoError(t, err)
					require.Equal(t, want, got, "step %d: Take(%d)", step, n)
				}
			})
		})
	}
}
