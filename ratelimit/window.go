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

func validateWindow(limit int, window time.Duration, fn string) error {
	if limit < 1 {
		return fmt.Errorf("ratelimit: %s with limit %d; the limit must be at least 1", fn, limit)
	}
	if window <= 0 {
		return fmt.Errorf("ratelimit: %s with window %v; the window must be above 0", fn, window)
	}
	return nil
}

// ValidateSlidingWindow reports what is wrong with a limit and a window for
// NewSlidingWindow, if anything: NewSlidingWindow panics with the same
// complaint. A program that reads them from outside (a file, flags) can call
// it first and report the error.
func ValidateSlidingWindow(limit int, window time.Duration) error {
	if err := validateWindow(limit, window, "NewSlidingWindow"); err != nil {
		return err
	}
	if limit > maxWindowLimit {
		return fmt.Errorf("ratelimit: NewSlidingWindow with limit %d; above %d, it could not keep the times of its events: use SlidingWindowCounter", limit, maxWindowLimit)
	}
	return nil
}

// maxWindowLimit is the largest limit of a SlidingWindow: counts of events
// up to twice it, and sums of them, fit in an int64 with room to spare.
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
// Its memory follows use, not limit: it keeps 16 bytes for each instant at
// which it allowed events (however many) among its last limit events, and
// forgets those that have left the window, giving the memory back. Each
// decision takes a lock. For very large limits used to the full, at many
// instants, SlidingWindowCounter answers in constant memory, approximately.
//
// Any window above 0 is valid, up to math.MaxInt64: a window longer than the
// process lives allows limit events, and then no more.
//
// Waiters in WaitN are served first in, first out, and while any waits, Allow
// and Take refuse, so that no newcomer overtakes them.
//
// Use NewSlidingWindow; the zero SlidingWindow is not usable: its methods
// panic. A SlidingWindow must not be copied after first use. It is safe for
// concurrent use by multiple goroutines.
type SlidingWindow struct {
	_      nocopy.NoCopy
	limit  int
	window int64

	w waiters // its lock guards the fields below

	// The last limit grants, as runs of those made at one time, oldest
	// first, in a ring of a power-of-two size that grows and shrinks with
	// the runs kept. The grants are numbered in order, from 0: runs[k].end
	// is one past the number of the last grant of run k; first is the
	// number of the first grant kept, and total one past the last. Grants
	// before first are forgotten: they left the window, or are older than
	// the last limit, and count as never made. The numbers wrap after 2^63
	// grants: they are only ever compared by their differences, which are
	// at most twice the limit.
	runs   []windowRun
	rhead  int // the index in runs of the oldest run
	rlen   int // the runs kept
	first  int64
	total  int64
	queued bool // goroutines wait in WaitN
}

// A windowRun is grants made at one time t, by one call or several.
type windowRun struct{ t, end int64 }

// minRuns is the smallest ring of runs: a SlidingWindow allocates nothing
// until its first grant.
const minRuns = 4

// NewSlidingWindow returns a SlidingWindow that allows limit events per window.
//
// NewSlidingWindow panics if limit is below 1 or window is not above 0, or if
// limit is above 2^40, more events than it could keep the times of (use
// SlidingWindowCounter). It allocates nothing up front: its memory follows
// the events it keeps (see SlidingWindow).
func NewSlidingWindow(limit int, window time.Duration) *SlidingWindow {
	if err := ValidateSlidingWindow(limit, window); err != nil {
		panic(err.Error())
	}
	return &SlidingWindow{limit: limit, window: int64(window)}
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

// run returns the k'th oldest run kept.
func (s *SlidingWindow) run(k int) *windowRun { return &s.runs[(s.rhead+k)&(len(s.runs)-1)] }

// at returns the time of the i'th oldest of the last limit grants: never if
// it was not made, or is forgotten.
func (s *SlidingWindow) at(i int) int64 {
	back := int64(s.limit - i) // 1 for the newest
	kept := s.total - s.first
	if back > kept {
		return never
	}
	if back == 1 {
		return s.run(s.rlen - 1).t
	}
	// The oldest run whose end is past the grant's number.
	idx := kept - back // of the grant, counted from first
	lo, hi := 0, s.rlen-1
	for lo < hi {
		if k := int(uint(lo+hi) >> 1); s.run(k).end-s.first > idx {
			hi = k
		} else {
			lo = k + 1
		}
	}
	return s.run(lo).t
}

// untilLeaves returns how long from now until the i'th oldest of the last
// limit grants leaves the window: 0 if it has, or never happened. It counts
// in differences of times, which are exact where the time it leaves, beyond
// math.MaxInt64, is not.
func (s *SlidingWindow) untilLeaves(i int, now int64) int64 {
	t := s.at(i)
	if t == never {
		return 0 // and not never+window, which may be after now
	}
	return max(0, subSat(s.window, subSat(now, t)))
}

// waitLocked returns how long from now until n events fit after ahead
// events queued before them.
func (s *SlidingWindow) waitLocked(ahead, n int, now int64) int64 {
	if k := queuedSum(ahead, n); k <= s.limit {
		return s.untilLeaves(k-1, now)
	}
	// Some of these events must wait for grants still to come, which
	// happen at now or later, to leave the window.
	return s.window
}

// syncLocked resets the window if its times come from another clock (see
// clockJump). s.w.q must be locked.
func (s *SlidingWindow) syncLocked(now int64) {
	if s.at(s.limit-1) > addSat(now, clockJump) {
		s.rhead, s.rlen, s.first = 0, 0, s.total
		s.resizeLocked()
	}
}

// fitsLocked reports whether n events may happen at now, queue aside.
func (s *SlidingWindow) fitsLocked(n int, now int64) bool {
	return n <= s.limit && s.at(n-1) <= subSat(now, s.window)
}

// recordLocked records n grants at now, or at the time of the newest grant if
// it is later, and returns the time it recorded them at.
func (s *SlidingWindow) recordLocked(n int, now int64) int64 {
	// A caller that read the clock before another took the lock may hold an
	// older now. Its check was the stricter for it, but its events must not
	// be dated before the newest: the times stay in order, and no event
	// looks older than it is.
	now = max(now, s.at(s.limit-1))
	total := s.total + int64(n)
	// Forget the runs that left the window, and those older than the last
	// limit grants: seen from now or later, which is when every later grant
	// is recorded, they count as never made. (A caller that read the clock
	// before now may find the window the emptier for it; the grants it
	// records are dated now or later, in windows without them.)
	for s.rlen > 0 {
		o := s.run(0)
		if total-o.end < int64(s.limit) && subSat(now, o.t) < s.window {
			break
		}
		s.first = o.end
		s.rhead = (s.rhead + 1) & (len(s.runs) - 1)
		s.rlen--
	}
	if s.rlen > 0 && s.run(s.rlen-1).t == now {
		s.run(s.rlen - 1).end = total
	} else {
		if s.rlen == 0 {
			s.first = s.total
		}
		if s.rlen == len(s.runs) {
			s.resizeLocked()
		}
		s.rlen++
		*s.run(s.rlen - 1) = windowRun{t: now, end: total}
	}
	s.total = total
	if len(s.runs) > minRuns && s.rlen <= len(s.runs)/4 {
		s.resizeLocked()
	}
	return now
}

// resizeLocked moves the runs kept to a ring twice their number (minRuns at
// least): it doubles a full ring, and halves one a quarter full, so that
// memory follows the grants kept and a grant costs O(1) moves on average.
func (s *SlidingWindow) resizeLocked() {
	size := minRuns
	for size < 2*s.rlen {
		size *= 2
	}
	if size == len(s.runs) {
		return
	}
	runs := make([]windowRun, size)
	for k := range s.rlen {
		runs[k] = *s.run(k)
	}
	s.runs, s.rhead = runs, 0
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
	return s.take(n, nowNs(), nil, nil)
}

// Take is AllowN with the details of the decision.
//
// Take panics if n is below 1.
func (s *SlidingWindow) Take(n int) Decision {
	checkN(n, "SlidingWindow.Take")
	var d Decision
	s.take(n, nowNs(), &d, nil)
	return d
}

func (s *SlidingWindow) allowAt(n int, now int64) bool { return s.take(n, now, nil, nil) }

func (s *SlidingWindow) takeAt(n int, now int64) Decision {
	var d Decision
	s.take(n, now, &d, nil)
	return d
}

// take records n events at now if they may happen, and fills d if it is not
// nil. If g is not nil, a grant fills it with what refund needs to take the
// events back.
func (s *SlidingWindow) take(n int, now int64, d *Decision, g *grant) bool {
	s.check()
	s.w.q.Lock()
	defer s.w.q.Unlock()
	s.syncLocked(now)
	ok := !s.queued && s.fitsLocked(n, now)
	if ok {
		at := s.recordLocked(n, now)
		if g != nil {
			*g = grant{at: at}
		}
	}
	if d != nil {
		s.decideLocked(d, ok, n, now)
	}
	return ok
}

// decideLocked fills d with the decision ok for n events at now.
func (s *SlidingWindow) decideLocked(d *Decision, ok bool, n int, now int64) {
	*d = Decision{Allowed: ok, Limit: s.limit, Window: time.Duration(s.window)}
	// The grants still inside the window are the newest ones: find the
	// oldest of them.
	from := subSat(now, s.window)
	d.Remaining = sort.Search(s.limit, func(i int) bool { return s.at(i) > from })
	d.ResetAfter = time.Duration(s.untilLeaves(s.limit-1, now))
	switch ahead := s.w.queued; {
	case ok:
	case n > s.limit:
		d.RetryAfter = Never
	default:
		d.RetryAfter = time.Duration(s.waitLocked(ahead, n, now))
	}
}

// Wait waits until one event may happen, after the goroutines already
// waiting, then records it: WaitN(ctx, 1). On failure it returns ctx.Err(),
// or ErrWouldExceedDeadline when the event cannot happen before ctx's
// deadline, and records nothing; a ctx already done fails even when the event
// may happen.
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
	if s.take(n, nowNs(), nil, nil) {
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
	return false, sw.untilLeaves(n-1, now)
}

func (s *windowWaitable) earliestLocked(ahead, n int, now int64) int64 {
	return addSat(now, (*SlidingWindow)(s).waitLocked(ahead, n, now))
}
