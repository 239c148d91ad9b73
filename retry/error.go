package retry

import (
	"errors"
	"strconv"
	"time"
)

// Permanent marks err as not worth retrying: an attempt that returns it (or
// an error wrapping it) is the last. errors.Is and errors.As see err through
// it, and its message is err's. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// isPermanent reports whether Permanent marked err or an error it wraps.
func isPermanent(err error) bool {
	if _, ok := err.(*permanentError); ok { // the common case, without errors.As
		return true
	}
	var p *permanentError
	return errors.As(err, &p)
}

// retryAfterer is an error that says when to try again: breaker.OpenError,
// or an HTTP response with Retry-After seen through Transport.
type retryAfterer interface {
	RetryAfter() time.Duration
}

// retryAfter returns the wait that err (or an error it wraps) asks for, and
// whether it asks for one.
func retryAfter(err error) (time.Duration, bool) {
	ra, ok := err.(retryAfterer)
	if !ok && !errors.As(err, &ra) {
		return 0, false
	}
	return ra.RetryAfter(), true
}

// Reason is why Execute stopped retrying.
type Reason int

const (
	// MaxAttemptsReached: Policy.MaxAttempts attempts were made.
	MaxAttemptsReached Reason = iota + 1
	// MaxElapsedReached: the next wait would end at or after
	// Policy.MaxElapsed since the first attempt began.
	MaxElapsedReached
	// DeadlineReached: the next wait would end at or after ctx's deadline.
	// The ctx has not ended yet, so the error need not match
	// context.DeadlineExceeded.
	DeadlineReached
	// BudgetSpent: the Policy's Budget refused the retry.
	BudgetSpent
	// NotRetryable: the last error was Permanent, or Policy.Retryable said
	// no.
	NotRetryable
	// ContextDone: the caller's ctx ended, after an attempt or during a
	// wait. The Error then matches ctx.Err() too.
	ContextDone
)

// String returns a short description of the reason: "max attempts reached".
func (r Reason) String() string {
	switch r {
	case MaxAttemptsReached:
		return "max attempts reached"
	case MaxElapsedReached:
		return "max elapsed time reached"
	case DeadlineReached:
		return "next wait would pass the deadline"
	case BudgetSpent:
		return "retry budget spent"
	case NotRetryable:
		return "not retryable"
	case ContextDone:
		return "context done"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Error is what Execute returns when it gives up after a failed attempt,
// whatever the reason. It wraps the last attempt's error, so that errors.Is
// and errors.As see it, and, when the caller's ctx stopped the retries, the
// ctx's error too (errors.Is(err, context.Canceled) holds).
//
// An Error is a plain value: it may be copied.
type Error struct {
	Attempts int    // attempts made, the first included
	Last     error  // the last attempt's error
	Reason   Reason // why it stopped
	// Context is ctx.Err() when Reason is ContextDone, else nil.
	Context error
}

// Error describes the last error, how many attempts were made and why no
// more were.
func (e *Error) Error() string {
	last := "<nil>"
	if e.Last != nil {
		last = e.Last.Error()
	}
	s := "retry: " + strconv.Itoa(e.Attempts) + " attempt"
	if e.Attempts != 1 {
		s += "s"
	}
	s += " (" + e.Reason.String()
	if e.Context != nil {
		s += ": " + e.Context.Error()
	}
	return s + "): " + last
}

// Unwrap returns the last attempt's error, and the ctx's error when the ctx
// stopped the retries.
func (e *Error) Unwrap() []error {
	switch {
	case e.Last == nil && e.Context == nil:
		return nil
	case e.Context == nil:
		return []error{e.Last}
	case e.Last == nil:
		return []error{e.Context}
	}
	return []error{e.Last, e.Context}
}
