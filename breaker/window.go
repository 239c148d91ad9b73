package breaker

import (
	"math"
	"sync"

	"github.com/ctxsync/ctxsync/internal/clock"
)

// A window holds the outcomes the rate rules look at: the last size calls, or
// the calls of the last duration in buckets. Ignored calls do not enter it,
// nor do calls admitted before the breaker last closed.
type window struct {
	mu sync.Mutex // guards the fields below

	gen uint64 // the generation of the breaker's state word that it counts

	// Count-based: a ring of the last len(ring) outcomes.
	ring []outcomeBits
	pos  int

	// Time-based: buckets of bucketNs each, in a ring. latest is the latest
	// time an outcome was dated or the totals were read at, and epoch the
	// stretch of bucketNs it falls in: the buckets hold no older outcomes
	// than the window from it.
	bucketNs int64
	buckets  []bucket
	latest   int64
	epoch    int64

	calls, failures, slow int // totals in the window
}

type outcomeBits uint8

const (
	wasCall    outcomeBits = 1 << iota // the slot holds a call
	wasFailure                         // it failed
	wasSlow                            // it was slow
)

type bucket struct {
	epoch                 int64 // which stretch of bucketNs it counts
	calls, failures, slow int
}

func newWindow(s settings) *window {
	if s.WindowDuration > 0 {
		// A bucket's width is WindowDuration/WindowBuckets rounded up to
		// a whole nanosecond, and the buckets are as many as it takes to
		// span WindowDuration: rounded down, a 19ns window of 10 buckets
		// would forget a call after 10ns, and any window lose the rest of
		// its division by WindowBuckets. Rounded up, it spans less than a
		// bucket more than asked (a 19ns window, 10 buckets of 2ns; an
		// 11ns one, 6), and a window shorter than WindowBuckets
		// nanoseconds gets a bucket per nanosecond. The span, width*n, may
		// be beyond math.MaxInt64 for a WindowDuration near it; it is
		// never computed, and the divisions below cannot overflow.
		d := int64(s.WindowDuration)
		width := (d-1)/int64(s.WindowBuckets) + 1
		n := (d-1)/width + 1
		w := &window{
			bucketNs: width,
			buckets:  make([]bucket, n),
			latest:   math.MinInt64, // no time yet: the first is not stale
		}
		w.resetLocked()
		return w
	}
	return &window{ring: make([]outcomeBits, s.WindowSize)}
}

// add records the outcome at now of a call admitted in generation gen, and
// returns the totals of the window. A call of another generation is left out,
// and add returns ok == false.
func (w *window) add(gen uint64, now int64, failure, slow bool) (calls, failures, slows int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen != w.gen {
		return 0, 0, 0, false
	}
	b := wasCall
	if failure {
		b |= wasFailure
	}
	if slow {
		b |= wasSlow
	}
	if w.ring != nil {
		w.remove(w.ring[w.pos])
		w.ring[w.pos] = b
		w.pos = (w.pos + 1) % len(w.ring)
	} else {
		bk := w.bucketLocked(now)
		bk.calls++
		if failure {
			bk.failures++
		}
		if slow {
			bk.slow++
		}
	}
	w.calls++
	if failure {
		w.failures++
	}
	if slow {
		w.slow++
	}
	return w.calls, w.failures, w.slow, true
}

func (w *window) remove(b outcomeBits) {
	if b&wasCall == 0 {
		return
	}
	w.calls--
	if b&wasFailure != 0 {
		w.failures--
	}
	if b&wasSlow != 0 {
		w.slow--
	}
}

// bucketLocked returns the bucket of now, after emptying the buckets that
// have left the window.
//
// Callers read the clock before they take the lock, so now may be a little
// older than a time already used: a call that read the clock just before a
// bucket began, and locked just after another started the bucket. Its
// outcome goes in the newest bucket, as if it had read the clock later, so
// that it neither counts in a bucket that may have left the window nor
// empties a newer one. Only a time far behind the latest one comes from
// another clock (see clock.Jump), and starts the window afresh.
func (w *window) bucketLocked(now int64) *bucket {
	if now < w.latest {
		if w.latest-now <= clock.Jump {
			now = w.latest
		} else {
			w.resetLocked()
		}
	}
	w.latest = now
	epoch := floorDiv(now, w.bucketNs)
	n := int64(len(w.buckets))
	// Empty the buckets of the stretches between the last epoch and this
	// one, which held outcomes a window older: at most every bucket, once
	// per stretch, not every bucket at every call.
	for e := max(w.epoch+1, epoch-n+1); e <= epoch; e++ {
		bk := &w.buckets[int(((e%n)+n)%n)]
		w.calls -= bk.calls
		w.failures -= bk.failures
		w.slow -= bk.slow
		*bk = bucket{epoch: e}
	}
	w.epoch = max(w.epoch, epoch)
	return &w.buckets[int(((epoch%n)+n)%n)]
}

// totals returns the totals of the window at now.
func (w *window) totals(now int64) (calls, failures, slows int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buckets != nil {
		w.bucketLocked(now)
	}
	return w.calls, w.failures, w.slow
}

// reset empties the window, to count the calls of generation gen.
func (w *window) reset(gen uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen = gen
	w.resetLocked()
}

func (w *window) resetLocked() {
	clear(w.ring)
	w.pos = 0
	for i := range w.buckets {
		w.buckets[i] = bucket{epoch: -1 << 62}
	}
	w.epoch = -1 << 62
	w.calls, w.failures, w.slow = 0, 0, 0
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}
