package retry

import (
	"math"
	"math/rand/v2"
	"time"
)

// backoff computes the waits of one Execute.
type backoff struct {
	jitter   Jitter
	noDelay  bool
	initial  time.Duration
	maxDelay time.Duration
	mult     float64
	// exp is the next wait before jitter, capped at maxDelay. It is kept
	// in floating point so that small waits grow: 1ns × 1.5, truncated,
	// would stay 1ns for ever.
	exp  float64
	prev time.Duration // the last wait, for DecorrelatedJitter
}

func newBackoff(p *Policy) backoff {
	b := backoff{
		jitter: p.Jitter, noDelay: p.NoDelay,
		initial: p.InitialDelay, maxDelay: p.MaxDelay, mult: p.Multiplier,
	}
	if b.initial == 0 {
		b.initial = defaultInitial
	}
	if b.maxDelay == 0 {
		b.maxDelay = defaultMaxDelay
	}
	if b.mult == 0 {
		b.mult = defaultMultiplier
	}
	b.exp = float64(min(b.initial, b.maxDelay))
	b.prev = b.initial
	return b
}

// next returns the next wait.
func (b *backoff) next() time.Duration {
	if b.noDelay {
		return 0
	}
	d := min(toDuration(b.exp), b.maxDelay)
	b.exp = min(b.exp*b.mult, float64(b.maxDelay))
	switch b.jitter {
	case FullJitter:
		return upTo(d)
	case EqualJitter:
		half := d / 2
		return d - half + upTo(half)
	case DecorrelatedJitter:
		lo, hi := b.initial, scale(b.prev, 3)
		if hi < lo {
			hi = lo // InitialDelay above MaxDelay: prev was capped
		}
		b.prev = min(lo+upTo(hi-lo), b.maxDelay)
		return b.prev
	}
	return d
}

// maxDuration is the longest time.Duration.
const maxDuration = time.Duration(math.MaxInt64)

// scale returns d × m for m >= 1, saturated at maxDuration: float64 has no
// room for every int64, and converting a float64 at or beyond 2^63 to an
// int64 is undefined in Go (it gives math.MinInt64 on amd64).
func scale(d time.Duration, m float64) time.Duration {
	if m == 1 {
		return d
	}
	return toDuration(float64(d) * m) // +Inf included
}

// toDuration converts f >= 0 to a Duration, saturated at maxDuration.
func toDuration(f float64) time.Duration {
	if f >= 1<<63 {
		return maxDuration
	}
	return time.Duration(f)
}

// upTo returns a random duration between 0 and d, both included.
func upTo(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return 0
	case d == maxDuration:
		return time.Duration(rand.Int64()) // [0, d): d+1 would wrap
	}
	return time.Duration(rand.Int64N(int64(d) + 1))
}
