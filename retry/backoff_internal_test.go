package retry

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestHugeDurationsSaturate: delays near math.MaxInt64 and huge multipliers
// saturate at MaxDelay, never wrap to negative or small waits, whatever the
// jitter.
func TestHugeDurationsSaturate(t *testing.T) {
	for _, j := range []Jitter{NoJitter, FullJitter, EqualJitter, DecorrelatedJitter} {
		for _, p := range []Policy{
			{InitialDelay: math.MaxInt64, MaxDelay: math.MaxInt64},
			{InitialDelay: math.MaxInt64 - 1, MaxDelay: math.MaxInt64 - 1, Multiplier: 1.0000001},
			{InitialDelay: math.MaxInt64 / 2, MaxDelay: math.MaxInt64, Multiplier: 3},
			{InitialDelay: time.Second, MaxDelay: math.MaxInt64, Multiplier: math.MaxFloat64},
			{InitialDelay: time.Second, MaxDelay: math.MaxInt64, Multiplier: math.Inf(1)},
			{InitialDelay: 1, MaxDelay: math.MaxInt64, Multiplier: 1e300},
			{InitialDelay: time.Hour, MaxDelay: time.Second, Multiplier: 1e300},
		} {
			p.Jitter = j
			t.Run(fmt.Sprintf("%v/%d/%d/%g", j, p.InitialDelay, p.MaxDelay, p.Multiplier), func(t *testing.T) {
				p.check()
				b := newBackoff(&p)
				prev := time.Duration(0)
				for n := range 200 {
					d := b.next()
					if d < 0 || d > p.MaxDelay {
						t.Fatalf("wait %d = %v, want within [0, %v]", n+1, d, p.MaxDelay)
					}
					if j == NoJitter && d < prev {
						t.Fatalf("wait %d = %v, below the previous %v", n+1, d, prev)
					}
					prev = d
				}
				if j == NoJitter && prev != p.MaxDelay {
					t.Fatalf("last wait = %v, want MaxDelay %v", prev, p.MaxDelay)
				}
			})
		}
	}
}

// TestJitterBounds: each jitter stays within AWS's bounds.
func TestJitterBounds(t *testing.T) {
	p := Policy{InitialDelay: 10 * time.Millisecond, MaxDelay: time.Second, Multiplier: 2}
	for _, j := range []Jitter{FullJitter, EqualJitter, DecorrelatedJitter} {
		p.Jitter = j
		for range 200 {
			b := newBackoff(&p)
			exp := p.InitialDelay
			prev := p.InitialDelay
			for n := range 20 {
				d := b.next()
				var lo, hi time.Duration
				switch j {
				case FullJitter:
					lo, hi = 0, exp
				case EqualJitter:
					lo, hi = exp/2, exp
				case DecorrelatedJitter:
					lo, hi = p.InitialDelay, min(3*prev, p.MaxDelay)
				}
				if d < lo || d > hi {
					t.Fatalf("%v: wait %d = %v, want within [%v, %v]", j, n+1, d, lo, hi)
				}
				prev = d
				exp = min(2*exp, p.MaxDelay)
			}
		}
	}
}

// TestJitterSpreads: the jittered waits are not all the same.
func TestJitterSpreads(t *testing.T) {
	for _, j := range []Jitter{FullJitter, EqualJitter, DecorrelatedJitter} {
		p := Policy{Jitter: j}
		seen := map[time.Duration]bool{}
		for range 50 {
			b := newBackoff(&p)
			b.next()
			seen[b.next()] = true
		}
		if len(seen) < 10 {
			t.Errorf("%v: %d distinct second waits in 50, want spread", j, len(seen))
		}
	}
}

func TestScaleSaturates(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		m    float64
		want time.Duration
	}{
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64, 1.5, math.MaxInt64},
		{math.MaxInt64 / 2, 2, math.MaxInt64}, // 2^63-2 rounds to 2^63 in float64
		{1 << 62, 2, math.MaxInt64},
		{1, math.Inf(1), math.MaxInt64},
		{3, 2, 6},
	} {
		if got := scale(c.d, c.m); got != c.want {
			t.Errorf("scale(%d, %g) = %d, want %d", c.d, c.m, got, c.want)
		}
	}
}

func TestUpTo(t *testing.T) {
	for _, d := range []time.Duration{-5, 0, 1, math.MaxInt64, math.MaxInt64 - 1} {
		for range 100 {
			if got := upTo(d); got < 0 || got > max(d, 0) {
				t.Fatalf("upTo(%d) = %d, want within [0, %d]", d, got, max(d, 0))
			}
		}
	}
}

// TestSmallWaitsGrow: a wait of a few nanoseconds grows by a Multiplier
// close to 1, instead of staying put through truncation.
func TestSmallWaitsGrow(t *testing.T) {
	p := Policy{InitialDelay: 1, MaxDelay: time.Hour, Multiplier: 1.5, Jitter: NoJitter}
	b := newBackoff(&p)
	var got []time.Duration
	for range 7 {
		got = append(got, b.next())
	}
	want := []time.Duration{1, 1, 2, 3, 5, 7, 11}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("waits %v, want %v", got, want)
	}
}
