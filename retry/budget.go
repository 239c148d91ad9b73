package retry

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
)

// budgetBuckets is the number of one-second buckets of a Budget's window.
const budgetBuckets = 10

// depositBatch is how many first attempts are counted without a clock read:
// every depositBatch'th puts the batch in the bucket of the moment.
const depositBatch = 64

// A Budget caps the retries of every Policy that shares it: over a sliding
// window of 10 seconds, retries may be at most ratio × the first attempts
// made in it, plus minPerSecond × 10. When a dependency goes down, every call
// fails; without a budget, each of them retries, and the dependency sees
// several times its usual load just when it can least bear it (a retry
// storm). With a budget, the load stays within (1 + ratio) × the calls, plus
// the small reserve that lets rare callers retry at all. First attempts are
// never refused.
//
// Use NewBudget; the zero Budget panics at first use. A Budget must not be
// copied after first use. It is safe for concurrent use, and cheap: a first
// attempt costs one atomic add and no clock read (the clock is read once per
// 64 of them, and by each retry, which waits anyway). First attempts are
// counted in batches, each at the moment its count is taken, so the window
// may see up to 63 first attempts a little late or a little early.
//
// A Budget that Hedges with Delay 0 share also keeps their estimate of the
// service's latency (see Hedge.Delay): a duration, not a time, which it
// keeps across bubbles.
//
// The window runs on the clock of the goroutine that uses it: a Budget used
// both inside and outside a testing/synctest bubble, whose clocks differ,
// forgets its window when it crosses over, and starts anew.
type Budget struct {
	ratio   float64 // retries allowed per first attempt
	reserve float64 // retries allowed in any window, minPerSecond × 10
	made    bool    // made by NewBudget

	pending atomic.Int64 // first attempts not yet in a bucket

	latency hedgeLatency // the delay of the Hedges with Delay 0 that share it

	mu      sync.Mutex
	cur     int64                       // the second of the newest bucket; guarded by mu
	buckets [budgetBuckets]budgetBucket // by second modulo budgetBuckets; guarded by mu
}

type budgetBucket struct{ first, retries int64 }

// NewBudget returns a Budget that lets, over any 10 seconds, ratio retries
// per first attempt, plus minPerSecond × 10 retries: NewBudget(0.1, 1) lets
// retries add at most 10% to the load, and at least 10 retries in any 10
// seconds. It panics unless both are finite and not negative.
//
// Large values saturate: a ratio or a minPerSecond so large that its share
// or its reserve passes what a float64 holds (math.MaxFloat64, say) counts
// as +Inf, and lets every retry through; no NaN arises, even with no first
// attempt in the window. So NewBudget(math.MaxFloat64, math.MaxFloat64) is
// a Budget that refuses nothing. Retries are whole: a share and a reserve
// that add up to less than one (a tiny ratio, a minPerSecond below 0.1)
// let none, and NewBudget(0, 0) refuses every retry.
func NewBudget(ratio float64, minPerSecond float64) *Budget {
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) || ratio < 0 {
		panic("retry: NewBudget ratio must be finite and not negative")
	}
	if math.IsNaN(minPerSecond) || math.IsInf(minPerSecond, 0) || minPerSecond < 0 {
		panic("retry: NewBudget minPerSecond must be finite and not negative")
	}
	b := &Budget{ratio: ratio, reserve: minPerSecond * budgetBuckets, made: true}
	b.cur = second(clock.Now())
	return b
}

// deposit counts a first attempt.
func (b *Budget) deposit() {
	if !b.made {
		panic("retry: use NewBudget to make a Budget")
	}
	if b.pending.Add(1)%depositBatch == 0 {
		b.mu.Lock()
		b.advanceLocked(clock.Now())
		b.mu.Unlock()
	}
}

// undeposit takes back a first attempt that deposit counted, for a call
// that never reached its service: a request that met a mistake in the
// configuration of a Transport under retry.Transport. Counted, it would let
// retries for calls that were never made. It lands in the window when the
// next batch does, perhaps a second after the deposit, so that the window
// may count one first attempt fewer for that second (see withdraw).
func (b *Budget) undeposit() { b.pending.Add(-1) }

// withdraw reports whether a retry may be made now, and if so counts it.
func (b *Budget) withdraw() bool {
	if !b.made {
		panic("retry: use NewBudget to make a Budget")
	}
	now := clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advanceLocked(now)
	var first, retries int64
	for _, bk := range b.buckets {
		first += bk.first
		retries += bk.retries
	}
	first = max(first, 0) // an undeposit may land after its deposit left the window
	if float64(retries+1) > b.ratio*float64(first)+b.reserve {
		return false
	}
	b.buckets[slot(b.cur)].retries++
	return true
}

// advanceLocked moves the window to now: it empties the buckets of seconds
// that have left it, and puts the pending first attempts in the newest.
func (b *Budget) advanceLocked(now int64) {
	s := second(now)
	switch {
	case s < b.cur || s-b.cur >= budgetBuckets:
		// The whole window has passed, or the clock went back: a Budget
		// made outside a synctest bubble and used in one.
		b.buckets = [budgetBuckets]budgetBucket{}
	default:
		for t := b.cur + 1; t <= s; t++ {
			b.buckets[slot(t)] = budgetBucket{}
		}
	}
	b.cur = s
	b.buckets[slot(s)].first += b.pending.Swap(0)
}

// second returns the second of the clock's reading ns, rounded down (readings
// inside a synctest bubble are negative).
func second(ns int64) int64 {
	s := ns / int64(time.Second)
	if ns%int64(time.Second) < 0 {
		s--
	}
	return s
}

func slot(s int64) int {
	i := s % budgetBuckets
	if i < 0 {
		i += budgetBuckets
	}
	return int(i)
}
