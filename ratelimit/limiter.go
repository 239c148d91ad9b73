package ratelimit

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
	"github.com/ctxsync/ctxsync/internal/httpx"
)

// A Limiter decides whether events may happen now, or waits until they may.
// Every limiter of this package satisfies it, as do the per-key handles of
// Keyed. The Redis-backed limiter of ratelimit/redislimit limits many keys,
// so its *Limiter does not: the per-key *Handle that its For method returns
// does.
//
// n is at least 1: asked for fewer events (0 included), at any rate, +Inf
// too, the limiters of this package and redislimit's panic, naming the
// method, and take nothing. Transport and Middleware never ask a limiter
// for 0 events: a request that costs 0 passes without asking it.
type Limiter interface {
	// AllowN reports whether n events may happen now, and if so takes them.
	// When it returns false it takes nothing.
	AllowN(n int) bool
	// WaitN waits until n events may happen, then takes them. Waiters are
	// served first in, first out. It fails at once with ErrExceedsBurst if
	// the limiter can never allow n at a time.
	WaitN(ctx context.Context, n int) error
}

// A Taker is a Limiter that can say more than yes or no: how many events are
// left, and when to come back. The HTTP middleware needs it for its headers.
type Taker interface {
	Limiter
	// Take is AllowN with the details of the decision.
	Take(n int) Decision
}

// A Decision is the outcome of Take, with what a caller needs to tell its own
// callers: the rate-limit headers of an HTTP response, say.
type Decision struct {
	// Allowed reports whether the events were allowed, and taken.
	Allowed bool
	// Limit is the most events the limiter allows at once: the burst of a
	// token bucket, the limit of a window.
	Limit int
	// Window is the time over which Limit applies: for a token bucket, the
	// time it takes to refill from empty.
	Window time.Duration
	// Remaining is how many more events would be allowed right now, or
	// Unknown when the limiter cannot tell (a Limiter that is not a Taker).
	Remaining int
	// RetryAfter is how long to wait before asking again for the same number
	// of events, if they were refused; 0 if they were allowed. It is Never
	// if they can never be allowed (more than Limit at once).
	RetryAfter time.Duration
	// ResetAfter is how long until the limiter is back to its full allowance,
	// if nothing more is taken.
	ResetAfter time.Duration
}

// The -1s of a Decision. As everywhere in the library, -1 means "none": no
// count known, no time that would do.
const (
	// Unknown is the Remaining of a Decision whose limiter cannot tell.
	Unknown = -1
	// Never is the RetryAfter of a Decision that no wait would change:
	// more events than the limiter allows at once.
	Never time.Duration = -1
)

// ErrExceedsBurst is returned by WaitN when n is larger than the limiter can
// ever allow at once: more than the burst of a token bucket, or than the limit
// of a window. "Ever" is at the burst the limiter has when it answers: a
// TokenBucket's SetBurst may raise it later, and the same call then goes
// through. No wait of the caller's can do that, so retry.Transport does not
// retry the error.
var ErrExceedsBurst = httpx.ErrExceedsBurst // one value: retry.Transport does not retry it

// ErrWouldExceedDeadline is returned by WaitN when the events could not be
// allowed before the deadline of its ctx: WaitN returns at once rather than
// sleep until then. errors.Is(err, context.DeadlineExceeded) holds.
var ErrWouldExceedDeadline = fmt.Errorf("ratelimit: wait would exceed the context deadline: %w", context.DeadlineExceeded)

// checkN panics on a count of events below 1.
func checkN(n int, fn string) {
	if n < 1 {
		panic(fmt.Sprintf("ratelimit: %s with n = %d; n must be at least 1", fn, n))
	}
}

// addSat returns a+b, or the int64 nearest to it if it overflows. Times
// and durations come from users and reach the extremes (a window of
// math.MaxInt64, a bubble's clock far from the real one): a sum that wrapped
// would turn "far in the future" into "long ago".
func addSat(a, b int64) int64 {
	s := a + b
	if (s > a) != (b > 0) {
		if b > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}

// subSat returns a-b, or the int64 nearest to it if it overflows.
func subSat(a, b int64) int64 {
	s := a - b
	if (s < a) != (b > 0) {
		if b > 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return s
}

// queuedSum returns ahead+n, the events asked for by the waiters queued and
// one more, or math.MaxInt if that overflows. The queue's count of events
// wraps (waiters of a limit near math.MaxInt, or many of a huge burst) and
// comes back exactly as they leave; a wrapped, negative count is read as more
// than any limiter allows.
func queuedSum(ahead, n int) int {
	if s := ahead + n; ahead >= 0 && s >= ahead {
		return s
	}
	return math.MaxInt
}

// isNil reports whether v is nil, or holds a nil pointer, map, slice, func,
// channel or interface: a limiter that would fail only at its first use.
func isNil(v any) bool { return httpx.IsNil(v) }

// nowNs reads the clock shared by every limiter of the package: nanoseconds of
// the monotonic clock, or of a synctest bubble's virtual clock (see
// internal/clock). Sharing it lets Keyed read the clock once per call, for
// itself and for the key's limiter.
func nowNs() int64 { return clock.Now() }

// atNs converts t to the clock's nanoseconds.
func atNs(t time.Time) int64 { return clock.At(t) }

// nsLimiter is a limiter of this package, which can decide at a time its caller
// read.
type nsLimiter interface {
	allowAt(n int, now int64) bool
	takeAt(n int, now int64) Decision
}

// nsOf returns l as an nsLimiter if it is one of this package's limiters
// itself, or nil. A type switch and not an assertion to nsLimiter: a user's
// type that embeds a *TokenBucket has its unexported methods too, and
// calling them would bypass the user's own AllowN and Take.
func nsOf(l any) nsLimiter {
	switch l := l.(type) {
	case *TokenBucket:
		return l
	case *SlidingWindow:
		return l
	case *SlidingWindowCounter:
		return l
	case *Combined:
		return l
	}
	return nil
}

// clockJump is how far in the future a limiter's state may seem before it is
// taken for state from another clock (see clock.Jump).
const clockJump = clock.Jump
