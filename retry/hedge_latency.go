package retry

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
)

// nowNanos reads the clock, the bubble's inside a testing/synctest bubble.
func nowNanos() int64 { return clock.Now() }

// Steps of the latency estimate: up by 1/hedgeUp of itself when a first
// attempt outlasts it, down by 1/hedgeDown when one answers within it.
//
// The estimate settles where the steps balance: where the share p of
// attempts that outlast it gives p·ln(1+1/32) = (1-p)·-ln(1-1/512), p ≈ 6%,
// a shade above the 95th percentile's 5%. The shade is on purpose. Where
// several delays are all the 95th percentile (a service whose slow calls
// are exactly 5%, slow by far), an estimate aimed at 5% exactly would drift
// at random between them, at times up to the slow calls' latency, where a
// hedge helps no one; aimed at 6%, it drifts down to the fast calls'
// latency, where every slow call is hedged early.
//
// The steps are small because calls in flight together see the same
// estimate: when it dips below a latency most calls share, all of them
// outlast it at once, and steps of 1/8 made the estimate jump tenfold with
// 20 calls in flight (the simulation of TestHedgeSimulation showed it);
// steps of 1/32 make it less than double. They are in proportion to the
// estimate, so it moves in ratio: from 200ms down to 10ms in about 1500
// calls, from 1ms up to 100ms in about 150.
const (
	hedgeUp   = 32
	hedgeDown = 512
)

// hedgeMinDelay is the least delay the estimate gives: a copy of a call
// that answers faster costs more (a goroutine, a ctx, a timer that fires)
// than it could save, and an estimate of a few nanoseconds would set a
// timer firing at once on every call.
const hedgeMinDelay = 100 * time.Microsecond

// hedgeLatency estimates, without reading the clock, about the 95th
// percentile of the latency of the first attempts of hedged calls that
// share a Budget (a stochastic approximation of the quantile in log scale).
// Each call tells only whether its first attempt outlasted the delay it was
// given, which the hedge timer tells anyway; the first call, finding no
// estimate, times its attempt with two clock reads to seed it.
//
// The zero value has no estimate. It holds a duration, not a time: a Budget
// made outside a testing/synctest bubble and used inside keeps it.
type hedgeLatency struct {
	d atomic.Int64 // nanoseconds; 0 until seeded
}

// delay returns the estimate, or 0 if there is none yet.
func (l *hedgeLatency) delay() time.Duration { return time.Duration(l.d.Load()) }

// seed sets the first estimate to d (at least hedgeMinDelay), unless
// another call did first.
func (l *hedgeLatency) seed(d time.Duration) {
	l.d.CompareAndSwap(0, int64(max(d, hedgeMinDelay)))
}

// observe moves the estimate after a first attempt that outlasted it (above)
// or answered within it. A concurrent update makes it try again: each
// update is a small step from the value it saw.
func (l *hedgeLatency) observe(above bool) {
	for {
		old := l.d.Load()
		if old == 0 {
			return // seeded by a call still running
		}
		var d int64
		if above {
			d = old + old/hedgeUp // old >= hedgeMinDelay: the step is not 0
			if d < old {          // wrapped: saturate
				d = math.MaxInt64
			}
		} else {
			d = max(old-old/hedgeDown, int64(hedgeMinDelay))
		}
		if l.d.CompareAndSwap(old, d) {
			return
		}
	}
}
