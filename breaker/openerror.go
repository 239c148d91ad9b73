package breaker

import (
	"errors"
	"fmt"
	"time"
)

// ErrOpen is the error a refused call matches with errors.Is: the breaker is
// open, or half-open with its trial calls all in flight. The error returned is
// an *OpenError.
var ErrOpen = errors.New("breaker: circuit open")

// forcedRetryFloor is the least RetryAfter of a breaker forced open: a pace
// at which a retry loop may look again without spinning.
const forcedRetryFloor = time.Second

// An OpenError is returned for a call the breaker refused. Every call refused
// during one opening gets the same *OpenError: refusing allocates nothing.
// That one pointer is shared by every refused caller, in every goroutine, so
// it is read-only: read its fields and call its methods, which is safe from
// any number of goroutines at once, but never modify it (copy the struct
// first to change a copy).
//
// The zero OpenError is usable: its methods tell of a refusal with no name
// and a RetryAfter of 0. A nil *OpenError is no refusal: its Error says it
// is nil, its RetryAfter is 0, and it matches nothing, not even ErrOpen.
type OpenError struct {
	Name  string // the breaker's Settings.Name
	State State  // Open, or HalfOpen with every trial slot taken
	// Until is when the open time ends and the breaker lets a trial call
	// through; zero when half-open or forced open.
	Until time.Time
	// Forced reports that ForceOpen opened the breaker: it refuses every
	// call until Reset, whatever the time.
	Forced bool

	openFor time.Duration // the length of the opening
	// made reports that a Breaker made the error, and openFor is known:
	// one that a program builds has none, and its Until alone decides.
	made bool
}

// RetryAfter returns how long until the breaker lets a trial call through:
// the rest of the open time (never more than the opening's length), or 0
// once it is over or when half-open. It reads the clock.
//
// A breaker forced open has no end in time: until Reset (or Disable) nobody
// knows when it lets calls through. For it RetryAfter returns the length of
// an opening (OpenTimeout, or OpenBackoff's), as the pace at which to look
// again, and at least a second: 0 (from an OpenBackoff that returns 0), or a
// few nanoseconds, would tell callers that honour it, as retry.Transport
// does, to retry at once, over and over. A retry.Policy whose MaxRetryAfter
// is shorter gives up at once.
func (e *OpenError) RetryAfter() time.Duration {
	switch {
	case e == nil:
		return 0
	case e.Forced:
		return max(e.openFor, forcedRetryFloor)
	case e.Until.IsZero():
		return 0
	}
	d := max(0, time.Until(e.Until))
	if e.made {
		// The rest of an opening is never longer than the opening. Until
		// may be on another clock than time.Now's: the process's, read
		// inside a testing/synctest bubble, where time.Until would say
		// decades, for an opening the breaker counts as over.
		d = min(d, e.openFor)
	}
	return d
}

// Error says that the call was refused, and for an open breaker, for how long
// it will refuse calls.
func (e *OpenError) Error() string {
	if e == nil {
		return "breaker: <nil *OpenError>"
	}
	name := ""
	if e.Name != "" {
		name = " " + e.Name
	}
	switch {
	case e.State == HalfOpen:
		return "breaker:" + name + " circuit half-open, trial calls in flight"
	case e.Forced:
		return "breaker:" + name + " circuit forced open"
	}
	return fmt.Sprintf("breaker:%s circuit open, retry after %v", name, e.RetryAfter().Round(time.Millisecond))
}

// Is reports whether target is ErrOpen, and e not nil.
func (e *OpenError) Is(target error) bool { return target == ErrOpen && e != nil }
