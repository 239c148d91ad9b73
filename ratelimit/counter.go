package ratelimit

import (
	"context"
	"math"
	"time"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A SlidingWindowCounter allows about limit events in any interval of length
// window, in constant memory: it counts the events of the current fixed window
// and of the one before, and weighs the previous count by how much of the
// previous window the sliding window still covers.
//
// The estimate assumes the previous window's events were evenly spread. When
// they were not, it can allow a little more, or less, than limit in some
// interval. Measured on real traffic the error is tiny (Cloudflare reported 0.003%
// of requests wrongly allowed or refused over 400 million); use SlidingWindow
// where the limit must hold exactly, and this where memory per key matters.
//
// Waiters in WaitN are served first in, first out, and while any waits, Allow
// and Take refuse.
//
// Any window above 0 is valid, up to math.MaxInt64, as for SlidingWindow.
//
// Use NewSlidingWindowCounter; the zero value is not usable: its methods
// panic. A SlidingWindowCounter must not be copied after first use. It is
// safe for concurrent use by multiple goroutines.
type SlidingWindowCounter struct {
	_      nocopy.NoCopy
	limit  int
	window int64

	w waiters // its lock guards the fields below

	start      int64 // start of the current fixed window
	curr, prev int   // events in the current and the previous fixed window
	queued     bool
}

// NewSlidingWindowCounter returns a SlidingWindowCounter that allows about
// limit events per window.
//
// NewSlidingWindowCounter panics if limit is below 1 or window is not above 0.
func NewSlidingWindowCounter(limit int, window time.Duration) *SlidingWindowCounter {
	if err := ValidateSlidingWindowCounter(limit, window); err != nil {
		panic(err.Error())
	}
	return &SlidingWindowCounter{limit: limit, window: int64(window)}
}

// ValidateSlidingWindowCounter reports what is wrong with a limit and a
// window for NewSlidingWindowCounter, if anything: NewSlidingWindowCounter
// panics with the same complaint. A program that reads them from outside (a
// file, flags) can call it first and report the error.
func ValidateSlidingWindowCounter(limit int, window time.Duration) error {
	return validateWindow(limit, window, "NewSlidingWindowCounter")
}

// errZeroCounter is the panic of a zero SlidingWindowCounter's first use.
const errZeroCounter = "ratelimit: use NewSlidingWindowCounter; the zero SlidingWindowCounter is not usable"

// check panics if c was not made by NewSlidingWindowCounter: its window of 0
// would divide by zero.
func (c *SlidingWindowCounter) check() {
	if c.limit == 0 {
		panic(errZeroCounter)
	}
}

// advanceLocked moves the fixed windows forward to now. Sums saturate (see
// addSat): with a window near math.MaxInt64, start+window is past any now,
// and the first fixed window never ends.
func (c *SlidingWindowCounter) advanceLocked(now int64) {
	if now < subSat(c.start, clockJump) {
		// A clock from another world (see clockJump): start afresh.
		c.start, c.curr, c.prev = now, 0, 0
		return
	}
	end := addSat(c.start, c.window)
	if now < end {
		return
	}
	if now < addSat(end, c.window) {
		c.prev = c.curr
	} else {
		c.prev = 0
	}
	c.curr = 0
	// now-start fits in an int64, but for a bubble that slept for
	// centuries: the fixed windows then start afresh at now.
	if elapsed := subSat(now, c.start); elapsed < math.MaxInt64 {
		c.start = now - elapsed%c.window
	} else {
		c.start = now
	}
}

// elapsedLocked is how far now is into the current fixed window: between 0
// and the window, after advanceLocked. A caller whose reading of the clock is
// older than start counts as at start.
func (c *SlidingWindowCounter) elapsedLocked(now int64) int64 { return max(0, now-c.start) }

// countLocked is the estimated number of events in the window ending at now.
func (c *SlidingWindowCounter) countLocked(now int64) float64 {
	covered := float64(c.window-c.elapsedLocked(now)) / float64(c.window) // of the previous window
	return float64(c.prev)*covered + float64(c.curr)
}

// fitsLocked reports whether n more events fit at now, queue aside.
func (c *SlidingWindowCounter) fitsLocked(n int, now int64) bool {
	// The estimate is a float, which near math.MaxInt rounds: the count of
	// the current window must also fit, in integers, or it would overflow.
	return n <= c.limit-c.curr && c.countLocked(now)+float64(n) <= float64(c.limit)
}

// remainingLocked is how many more events fit at now, queue aside.
func (c *SlidingWindowCounter) remainingLocked(now int64) int {
	if c.prev == 0 {
		return c.limit - c.curr // exact: floats round near math.MaxInt
	}
	if rem := float64(c.limit) - c.countLocked(now); rem < float64(c.limit-c.curr) {
		return max(0, int(rem))
	}
	// Rounded up to what cannot be: at most what the current window leaves.
	// (And not int(2^63), which does not convert.)
	return c.limit - c.curr
}

// fracNs returns frac of the window, in nanoseconds rounded up; frac is at
// most 1.
func (c *SlidingWindowCounter) fracNs(frac float64) int64 {
	ns := math.Ceil(frac * float64(c.window))
	if ns >= float64(c.window) {
		// The float of a window near math.MaxInt64 rounds up to 2^63,
		// which does not convert.
		return c.window
	}
	return int64(ns)
}

// waitLocked returns how long from now until n more events fit, if the k
// events asked for are n.
func (c *SlidingWindowCounter) waitLocked(n int, now int64) int64 {
	room := float64(c.limit - n)
	elapsed := c.elapsedLocked(now)
	if n <= c.limit-c.curr {
		// In this window, once the previous one's weight has dropped enough.
		if c.prev == 0 {
			return 0
		}
		frac := 1 - (room-float64(c.curr))/float64(c.prev) // of the window to pass
		return max(0, c.fracNs(frac)-elapsed)
	}
	// In the next window, where this one's count becomes the previous.
	frac := 0.0
	if c.curr > 0 {
		frac = max(0, 1-room/float64(c.curr))
	}
	return addSat(c.window-elapsed, c.fracNs(frac))
}

// Allow reports whether one event may happen now, and if so counts it.
func (c *SlidingWindowCounter) Allow() bool { return c.AllowN(1) }

// AllowN reports whether n events may happen now, and if so counts them. When
// it returns false it counts nothing. It returns false while goroutines wait
// in WaitN.
//
// AllowN panics if n is below 1.
func (c *SlidingWindowCounter) AllowN(n int) bool {
	checkN(n, "SlidingWindowCounter.AllowN")
	return c.take(n, nowNs(), nil, nil)
}

// Take is AllowN with the details of the decision.
//
// Take panics if n is below 1.
func (c *SlidingWindowCounter) Take(n int) Decision {
	checkN(n, "SlidingWindowCounter.Take")
	var d Decision
	c.take(n, nowNs(), &d, nil)
	return d
}

func (c *SlidingWindowCounter) allowAt(n int, now int64) bool { return c.take(n, now, nil, nil) }

func (c *SlidingWindowCounter) takeAt(n int, now int64) Decision {
	var d Decision
	c.take(n, now, &d, nil)
	return d
}

// take counts n events at now if they may happen, and fills d if it is not
// nil. If g is not nil, a grant fills it with what refund needs to take the
// events back.
func (c *SlidingWindowCounter) take(n int, now int64, d *Decision, g *grant) bool {
	c.check()
	c.w.q.Lock()
	defer c.w.q.Unlock()
	c.advanceLocked(now)
	ok := !c.queued && c.fitsLocked(n, now)
	if ok {
		c.curr += n
		if g != nil {
			*g = grant{at: c.start}
		}
	}
	if d != nil {
		c.decideLocked(d, ok, n, now)
	}
	return ok
}

// decideLocked fills d with the decision ok for n events at now.
func (c *SlidingWindowCounter) decideLocked(d *Decision, ok bool, n int, now int64) {
	*d = Decision{Allowed: ok, Limit: c.limit, Window: time.Duration(c.window)}
	d.Remaining = c.remainingLocked(now)
	// Full again when both windows' counts have aged out.
	switch {
	case c.curr > 0:
		d.ResetAfter = time.Duration(addSat(c.window-c.elapsedLocked(now), c.window))
	case c.prev > 0:
		d.ResetAfter = time.Duration(c.window - c.elapsedLocked(now))
	}
	switch {
	case ok:
	case n > c.limit:
		d.RetryAfter = Never
	default:
		// Counted from now, not as a time that may saturate.
		if k := queuedSum(c.w.queued, n); k <= c.limit {
			d.RetryAfter = time.Duration(c.waitLocked(k, now))
		}
	}
}

// Wait waits until one event may happen, after the goroutines already
// waiting, then counts it: WaitN(ctx, 1). On failure it returns ctx.Err(), or
// ErrWouldExceedDeadline when the event cannot happen before ctx's deadline,
// and counts nothing; a ctx already done fails even when the event may
// happen.
func (c *SlidingWindowCounter) Wait(ctx context.Context) error { return c.WaitN(ctx, 1) }

// WaitN waits until n events may happen, after the goroutines already waiting,
// then counts them. It fails as SlidingWindow.WaitN does.
//
// WaitN panics if n is below 1.
func (c *SlidingWindowCounter) WaitN(ctx context.Context, n int) error {
	checkN(n, "SlidingWindowCounter.WaitN")
	c.check() // the zero counter panics even with a done ctx
	if err := waitq.CtxErr(ctx, "ratelimit"); err != nil {
		return err
	}
	if c.take(n, nowNs(), nil, nil) {
		return nil
	}
	return c.w.waitN(ctx, (*counterWaitable)(c), n)
}

// counterWaitable is a SlidingWindowCounter seen by its waiters.
type counterWaitable SlidingWindowCounter

func (c *counterWaitable) maxLocked() int              { return c.limit }
func (c *counterWaitable) setQueuedLocked(queued bool) { c.queued = queued }

func (c *counterWaitable) takeLocked(n int, now int64) (bool, int64) {
	sc := (*SlidingWindowCounter)(c)
	sc.advanceLocked(now)
	if sc.fitsLocked(n, now) {
		c.curr += n
		return true, 0
	}
	// At least a nanosecond: the estimate is a float, and a wait of 0 that
	// still does not fit would spin.
	return false, max(1, sc.waitLocked(n, now))
}

func (c *counterWaitable) earliestLocked(ahead, n int, now int64) int64 {
	sc := (*SlidingWindowCounter)(c)
	sc.advanceLocked(now)
	if k := queuedSum(ahead, n); k <= c.limit {
		return addSat(now, sc.waitLocked(k, now))
	}
	return now // no useful bound: let it wait
}
