package ratelimit

import (
	"math"
	"math/big"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// validBucket is the model of which rates and bursts a TokenBucket takes:
// the rate a number above 0, the burst at least 1, and an empty bucket full
// again within 2^57 ns, each token costing 1e9/rate ns rounded up. It
// computes exactly, on rationals; near the bound, where the package's floats
// may round the cost by a nanosecond a token either way, it says so (sure is
// false) and either answer is right.
func validBucket(rate float64, burst int) (valid, sure bool) {
	if !(rate > 0) || burst < 1 {
		return false, true
	}
	if math.IsInf(rate, 1) {
		return true, true
	}
	cost := new(big.Rat).Quo(big.NewRat(1e9, 1), new(big.Rat).SetFloat64(rate))
	ceil := new(big.Int).Quo(cost.Num(), cost.Denom())
	if !cost.IsInt() {
		ceil.Add(ceil, big.NewInt(1))
	}
	refill := new(big.Int).Mul(ceil, big.NewInt(int64(burst)))
	limit := big.NewInt(1 << 57)
	margin := new(big.Int).Abs(new(big.Int).Sub(refill, limit))
	// Within a nanosecond a token, and float64's 2^-52 of the product.
	slack := new(big.Int).Add(big.NewInt(int64(burst)), new(big.Int).Rsh(refill, 50))
	return refill.Cmp(limit) <= 0, margin.Cmp(slack) > 0
}

// FuzzTokenBucketParams: NewTokenBucket, SetRate, SetBurst and
// ValidateTokenBucket agree with validBucket on every rate and burst, tiny,
// huge, NaN and infinite ones included; a refused setting leaves the bucket
// as it was, and a bucket made or changed gives its whole burst at once, and
// then, unless its rate is infinite, nothing more at that moment.
func FuzzTokenBucketParams(f *testing.F) {
	f.Add(1.0, 1, 2.0, 2)
	f.Add(1.08e-10, 1, 1e-11, 0)
	f.Add(1e-300, 1, math.SmallestNonzeroFloat64, math.MaxInt)
	f.Add(math.Inf(1), math.MaxInt, math.NaN(), -1)
	f.Add(1e300, 3, math.MaxFloat64, 1<<57)
	f.Add(6.9e-9, 1, 7e-9, 1)
	f.Add(3.0, 3, 7.0, 7)
	f.Fuzz(func(t *testing.T, rate float64, burst int, rate2 float64, burst2 int) {
		synctest.Test(t, func(t *testing.T) { fuzzBucketParams(t, rate, burst, rate2, burst2) })
	})
}

// fuzzBucketParams is FuzzTokenBucketParams in a bubble, where time stands
// still: what the bucket holds at now is exact.
func fuzzBucketParams(t *testing.T, rate float64, burst int, rate2 float64, burst2 int) {
	{
		now := time.Now()
		check := func(fn string, rate float64, burst int, make func()) (made bool) {
			valid, sure := validBucket(rate, burst)
			defer func() {
				v := recover()
				if v != nil {
					msg, ok := v.(string)
					if !ok || !strings.HasPrefix(msg, "ratelimit: "+fn+" with ") {
						t.Fatalf("%s(rate %v, burst %d) panicked with %v", fn, rate, burst, v)
					}
				}
				if sure && made != valid {
					t.Fatalf("%s(rate %v, burst %d): made %v, want %v", fn, rate, burst, made, valid)
				}
				if got := ValidateTokenBucket(rate, burst) == nil; got != made {
					t.Fatalf("ValidateTokenBucket(%v, %d) says %v; %s made %v", rate, burst, got, fn, made)
				}
			}()
			make()
			return true
		}
		var b *TokenBucket
		if !check("NewTokenBucket", rate, burst, func() { b = NewTokenBucket(rate, burst) }) {
			return
		}
		// holds checks the bucket gives tokens at once, and no more.
		holds := func(rate float64, burst, tokens int) {
			require.Equal(t, rate, b.Rate())
			require.Equal(t, burst, b.Burst())
			require.True(t, b.AllowNAt(tokens, now), "rate %v, burst %d: not %d tokens", rate, burst, tokens)
			require.Equal(t, math.IsInf(rate, 1), b.AllowNAt(1, now), "rate %v, burst %d: more than %d tokens", rate, burst, tokens)
		}
		holds(rate, burst, burst)

		// The tokens stay through a change of rate, and of burst up to the
		// new burst.
		b = NewTokenBucket(rate, burst)
		tokens := burst
		if check("TokenBucket.SetRate", rate2, burst, func() { b.SetRate(rate2) }) {
			rate = rate2
		}
		if check("TokenBucket.SetBurst", rate, burst2, func() { b.SetBurst(burst2) }) {
			burst = burst2
		}
		holds(rate, burst, min(tokens, burst))
	}
}
