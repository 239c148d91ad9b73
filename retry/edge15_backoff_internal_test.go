package retry

import (
	"math"
	"testing"
	"time"
)

// Every wait the backoff computes, whatever its fields at their edges, is
// between 0 and MaxDelay: near math.MaxInt64 it saturates, and neither wraps
// nor goes negative, for every Jitter and Multiplier up to +Inf.
func TestBackoffEdgesSaturate(t *testing.T) {
	durs := []time.Duration{0, 1, 2, 3, time.Second, maxDuration / 3, maxDuration/2 + 1, maxDuration - 1, maxDuration}
	mults := []float64{0, 1, 1 + 1e-15, 1.5, 2, 3, 1e300, math.MaxFloat64, math.Inf(1)}
	for _, j := range []Jitter{FullJitter, EqualJitter, DecorrelatedJitter, NoJitter} {
		for _, in := range durs {
			for _, mx := range durs {
				for _, m := range mults {
					p := Policy{InitialDelay: in, MaxDelay: mx, Multiplier: m, Jitter: j}
					b := newBackoff(&p)
					for i := 0; i < 80; i++ {
						d := b.next()
						if d < 0 || d > b.maxDelay {
							t.Fatalf("%v, InitialDelay %v, MaxDelay %v, Multiplier %v: wait %d is %v, outside 0 to %v", j, in, mx, m, i+1, d, b.maxDelay)
						}
					}
				}
			}
		}
	}
}
