package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// bucketParams are the rate and burst, and what follows from them. They change
// together, by swapping the pointer.
type bucketParams struct {
	rate    float64
	burst   int
	tokenNs int64 // the cost of one token: 1e9/rate, rounded up
	burstNs int64 // burst·tokenNs: how far ahead of now tat may run
}

// newBucketParams returns the parameters of rate and burst, or panics with a
// message that names fn if they are not valid.
func newBucketParams(rate float64, burst int, fn string) *bucketParams {
	p, why := makeBucketParams(rate, burst)
	if p == nil {
		panic("ratelimit: " + fn + " with " + why)
	}
	return p
}

// makeBucketParams returns the parameters of rate and burst, or nil and why
// they are not valid.
func makeBucketParams(rate float64, burst int) (*bucketParams, string) {
	if !(rate > 0) { // NaN too
		return nil, fmt.Sprintf("rate %v; the rate must be above 0", rate)
	}
	if burst < 1 {
		return nil, fmt.Sprintf("burst %d; the burst must be at least 1", burst)
	}
	// Checked on floats before any conversion: below about 1.08e-10 a
	// second, 1e9/rate overflows an int64, and the conversion's result (on
	// amd64, math.MinInt64) would pass a check made on integers, and make
	// every token free.
	cost := math.Ceil(1e9 / rate) // 0 for +Inf; +Inf for the tiniest rates
	if cost*float64(burst) > tbMaxBurstNs {
		return nil, fmt.Sprintf("rate %v and burst %d: refilling would take over four years", rate, burst)
	}
	tokenNs := int64(cost)
	return &bucketParams{rate: rate, burst: burst, tokenNs: tokenNs, burstNs: tokenNs * int64(burst)}, ""
}

// ValidateTokenBucket returns an error if NewTokenBucket would panic with rate
// and burst, and nil otherwise: for callers that take the rate and burst from
// configuration, and would rather report a bad one than panic.
func ValidateTokenBucket(rate float64, burst int) error {
	if _, why := makeBucketParams(rate, burst); why != "" {
		return errors.New("ratelimit: " + why)
	}
	return nil
}

// carryCredit returns what credit, the tokens a bucket with parameters old
// holds, counted in nanoseconds of old's tokens, is in nanoseconds of p's:
// the same tokens, up to p's burst, rounded down. It counts in integers: a
// float holds 53 bits, and rounding a credit of more than 2^53 ns (104 days)
// could lose the nanosecond that makes the last token whole.
func carryCredit(credit int64, old, p *bucketParams) int64 {
	switch {
	case old.tokenNs == 0: // a bucket without a limit on the rate is always full
		return int64(min(old.burst, p.burst)) * p.tokenNs
	case credit < 0: // debt from an AllowNAt ahead of now: carried the same way
		return -carryCredit(-credit, old, p)
	case credit/old.tokenNs >= int64(p.burst):
		return p.burstNs
	}
	// Below p's burst, the result is below p.burstNs, 2^57 at most: only
	// the product needs 128 bits.
	hi, lo := bits.Mul64(uint64(credit), uint64(p.tokenNs))
	q, _ := bits.Div64(hi, lo, uint64(old.tokenNs))
	return int64(q)
}

// fitsAfter returns when k tokens fit, counted from base, the time from which
// the next token is counted; math.MaxInt64 if that is beyond what an int64
// holds.
func (p *bucketParams) fitsAfter(base int64, k int) int64 {
	room := int64(math.MaxInt64)
	if base > 0 {
		room -= base
	}
	if p.tokenNs > 0 && int64(k) > room/p.tokenNs {
		// Centuries of tokens (a rate near the slowest allowed, and many
		// waiters): later than any deadline, and more than an int64 holds.
		return math.MaxInt64
	}
	return base + int64(k)*p.tokenNs - p.burstNs
}
