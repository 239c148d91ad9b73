package ratelimit

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

func checkWindow(limit int, window time.Duration, fn string) {
	if limit < 1 {
		panic(fmt.Sprintf("ratelimit: %s with limit %d; the limit must be at least 1", fn, limit))
	}
	if window <= 0 {
		panic(fmt.Sprintf("ratelimit: %s with window %v; the window must be above 0", fn, window))
	}
}

// maxWindowLimit is the largest limit of a SlidingWindow: 8 TiB of times.
const maxWindowLimit = 1 << 40

// never is the time of a grant that never happened: before any time, and so
// outside every window, even one of math.MaxInt64 seen from a synctest
// bubble's clock. Sums of times saturate (see addSat), so that the start of a
// window, now-window, is never before it.
const never = math.MinInt64

// A SlidingWindow allows at most limit events in any interval of length
// window, exactly: it keeps the times of the last limit events, and allows n
// more only if the n-th oldest of them is at least a window old.
//
// It costs memory in proportion to limit (8 bytes per event), and each
// decision takes a lock. For very large limits, SlidingWindowCounter answers
// in constant memory, approximately.
//
// Any window above 0 is valid, up to math.MaxInt64: a window longer than the
// process lives allows limit events, and then no more.
//
// Waiters in WaitN are served first in, first out, and while any waits, Allow
// and Take refuse, so that no newcomer overtakes them.
//
// Use NewSlidingWindow; the zero SlidingWindow is not usable. A SlidingWindow
// must not be copied after first use. It is safe for concurrent use by
// multiple goroutines.
type SlidingWindow struct {
	_      nocopy.NoCopy
	limit  int
	window int64

	w waiters // its lock guards the fields below

	times  []int64 // the last limit grants, oldest at head
	head   int
	queued bool // goroutines wait in WaitN
}

// NewSlidingWindow returns a SlidingWindow that allows limit events per window.
//
// NewSlidingWindow panics if limit is below 1 or window is not above 0, or if
// limit is above 2^40: its times would take terabytes (use
// SlidingWindowCounter).
func NewSlidingWindow(limit int, window time.Duration) *SlidingWindow {
	checkWindow(limit, window, "NewSlidingWindow")
	if limit > maxWindowLimit {
		// A plain make would fail too, or exhaust memory, but with a
		// message that does not say why.
		panic(fmt.Sprintf("ratelimit: NewSlidingWindow with limit %d; above %d, its times would not fit in memory: use SlidingWindowCounter", limit, maxWindowLimit))
	}
	s := &SlidingWindow{limit: limit, window: int64(window), times: make([]int64, limit)}
	for i := range s.times {
		s.times[i] = never
	}
	return s
}

// errZeroWindow is the panic of a zero SlidingWindow's first use.
const errZeroWindow = "ratelimit: use NewSlidingWindow; the zero SlidingWindow is not usable"

// check panics if s was not made by NewSlidingWindow: its limit of 0 would
// divide by zero.
func (s *SlidingWindow) check() {
	if s.limit == 0 {
		panic(errZeroWindow)
	}
}

// at returns the time of the i'th oldest of the last limit grants.
func (s *SlidingWindow) at(i int) int64 { return s.times[(s.head+i)%s.limit] }

// leavesAt returns when the i'th oldest of the last limit grants leaves the
// window; never if it never happened.
func (s *SlidingWindow) leavesAt(i int) int64 {
	t := s.at(i)
	if t == never {
		return never // and not never+window, which may be after now
	}
	return addSat(t, s.window)
}

// syncLocked resets the window if its times come from another clock (see
// clockJump). s.w.q must be locked.
func (s *SlidingWindow) syncLocked(now int64) {
	if s.at(s.limit-1) > addSat(now, clockJump) {
		for i := range s.times {
			s.times[i] = never
		}
	}
}

// fitsLocked reports whether n events may happen at now, queue aside.
func (s *SlidingWindow) fitsLocked(n int, now int64) bool {
	return n <= s.limit && s.at(n-1) <= subSat(now, s.window)
}

func (s *SlidingWindow) recordLocked(n int, now int64) {
	// A caller that read the clock before another took the lock may hold an
	// older now. Its check was the stricter for it, but its events must not
	// be dated before the newest: the times stay in order, and no event
	// looks older than it is.
	now = max(now, s.at(s.limit-1))
	for range n {
		s.times[s.head] = now
		s.head = (s.head + 1) % s.limit
	}
}

// Allow reports whether one event may happen now, and if so records it.
func (s *SlidingWindow) Allow() bool { return s.AllowN(1) }

// AllowN reports whether n events may happen now, and if so records them. When
// it returns false it records nothing. It returns false while goroutines wait
// in WaitN.
//
// AllowN panics if n is below 1.
func (s *SlidingWindow) AllowN(n int) bool {
	checkN(n, "SlidingWindow.AllowN")
	return s.take(n, nowNs(), nil)
}

// Take is AllowN with the details of the decision.
//
// Take panics if n is below 1.
func (s *SlidingWindow) Take(n int) Decision {
	checkN(n, "SlidingWindow.Take")
	var d Decision
	s.take(n, nowNs(), &d)
	return d
}

func (s *SlidingWindow) allowAt(n int, now int64) bool { return s.take(n, now, nil) }

func (s *SlidingWindow) take(n int, now int64, d *Decision) bool {
	s.check()
	s.w.q.Lock()
	defer s.w.q.Unlock()
	s.syncLocked(now)
	ok := !s.queued && s.fitsLocked(n, now)
	if ok {
		s.recordLocked(n, now)
	}
	if d != nil {
		*d = Decision{Allowed: ok, Limit: s.limit, Window: time.Duration(s.window)}
		// The grants still inside the window are the newest ones: find the
		// oldest of them.
		from := subSat(now, s.window)
		d.Remaining = sort.Search(s.limit, func(i int) bool { return s.at(i) > from })
		d.ResetAfter = time.Duration(max(0, subSat(s.leavesAt(s.limit-1), now)))
		switch ahead := s.w.queued; {
		case ok:
		case n > s.limit:
			d.RetryAfter = -1
		default:
			d.RetryAfter = time.Duration(max(0, (*windowWaitable)(s).earliestLocked(ahead, n, now)-now))
		}
	}
	return ok
}

// Wait waits until one event may happen, then records it.
func (s *SlidingWindow) Wait(ctx context.Context) error { return s.WaitN(ctx, 1) }

// WaitN waits until n events may happen, after the goroutines already waiting,
// then records them.
//
// It fails at once with ErrExceedsBurst if n is above the limit, and with
// ErrWouldExceedDeadline if the events cannot happen before the deadline of
// ctx. Otherwise, on failure, it returns ctx.Err() and records nothing; a ctx
// that is already done fails even when events may happen.
//
// WaitN panics if n is below 1.
func (s *SlidingWindow) WaitN(ctx context.Context, n int) error {
	checkN(n, "SlidingWindow.WaitN")
	s.check() // the zero window panics even with a done ctx
	if err := waitq.CtxErr(ctx, "ratelimit"); err != nil {
		return err
	}
	if s.take(n, nowNs(), nil) {
		return nil
	}
	return s.w.waitN(ctx, (*windowWaitable)(s), n)
}

// windowWaitable is a SlidingWindow seen by its waiters.
type windowWaitable SlidingWindow

func (s *windowWaitable) maxLocked() int { return s.limit }

func (s *windowWaitable) setQueuedLocked(queued bool) { s.queued = queued }

func (s *windowWaitable) takeLocked(n int, now int64) (bool, int64) {
	sw := (*SlidingWindow)(s)
	sw.syncLocked(now)
	if sw.fitsLocked(n, now) {
		sw.recordLocked(n, now)
		return true, 0
	}
	return false, subSat(sw.leavesAt(n-1), now)
}

func (s *windowWaitable) earliestLocked(ahead, n int, now int64) int64 {
	sw := (*SlidingWindow)(s)
	if k := ahead + n; k <= s.limit {
		return max(now, sw.leavesAt(k-1))
	}
	// Some of these events must wait for grants still to come, which
	// happen at now or later, to leave the window.
	return addSat(now, s.window)
}

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
// Use NewSlidingWindowCounter; the zero value is not usable. A
// SlidingWindowCounter must not be copied after first use. It is safe for
// concurrent use by multiple goroutines.
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
	checkWindow(limit, window, "NewSlidingWindowCounter")
	return &SlidingWindowCounter{limit: limit, window: int64(window)}
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
	// now-start fits: the windows are both since the same epoch, and now is
	// past start+window here; only a bubble slept for centuries saturates it.
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
	return c.take(n, nowNs(), nil)
}

// Take is AllowN with the details of the decision.
//
// Take panics if n is below 1.
func (c *SlidingWindowCounter) Take(n int) Decision {
	checkN(n, "SlidingWindowCounter.Take")
	var d Decision
	c.take(n, nowNs(), &d)
	return d
}

func (c *SlidingWindowCounter) allowAt(n int, now int64) bool { return c.take(n, now, nil) }

func (c *SlidingWindowCounter) take(n int, now int64, d *Decision) bool {
	c.check()
	c.w.q.Lock()
	defer c.w.q.Unlock()
	c.advanceLocked(now)
	ok := !c.queued && c.fitsLocked(n, now)
	if ok {
		c.curr += n
	}
	if d != nil {
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
			d.RetryAfter = -1
		default:
			d.RetryAfter = time.Duration(max(0, (*counterWaitable)(c).earliestLocked(c.w.queued, n, now)-now))
		}
	}
	return ok
}

// Wait waits until one event may happen, then counts it.
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
	if c.take(n, nowNs(), nil) {
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
	if k := ahead + n; k <= c.limit {
		return addSat(now, sc.waitLocked(k, now))
	}
	return now // no useful bound: let it wait
}
