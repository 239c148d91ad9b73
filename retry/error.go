package retry

import (
	"errors"
	"strconv"
	"time"

	"github.com/ctxsync/ctxsync/internal/closed"
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

// Final lets isPermanent find the mark and the closed sentinels in an error
// tree by one errors.As (see closed.Final).
func (*permanentError) Final(closed.Mark) {}

// isPermanent reports whether Permanent marked err or an error it wraps, or
// whether err is or wraps the ErrClosed of a ctxsync.Queue or a pool.Pool:
// neither opens again, so no later attempt could get past it.
//
// A closed sentinel is found as errors.Is finds it: by its type, and by the
// Is method of an error that says it is one without wrapping it (as
// breaker.OpenError is ErrOpen), which a caller's errors.Is believes too.
func isPermanent(err error) bool {
	for e := err; e != nil; {
		switch x := e.(type) {
		case *permanentError, *closed.Error:
			return true
		case interface{ As(any) bool }, interface{ Unwrap() []error }:
			// Both kinds at once: see closed.Final. errors.Is allocates
			// nothing.
			var f closed.Final
			return errors.As(err, &f) || errors.Is(err, closed.Queue) || errors.Is(err, closed.Pool)
		case interface{ Is(error) bool }:
			if x.Is(closed.Queue) || x.Is(closed.Pool) {
				return true
			}
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

// retryAfterer is an error that says when to try again: breaker.OpenError,
// or an HTTP response with Retry-After seen through Transport. An alias of
// the unnamed type, so that an error's As method can target it without
// naming this package.
type retryAfterer = interface {
	RetryAfter() time.Duration
}

// retryAfter returns the wait that err (or an error it wraps, as errors.As
// finds it) asks for, and whether it asks for one.
//
// It and isPermanent follow a chain of single wraps themselves, and leave
// only trees and errors with an As method to errors.As: errors.As allocates
// (its target escapes), and a failed attempt should cost no allocation.
func retryAfter(err error) (time.Duration, bool) {
	for e := err; e != nil; {
		switch x := e.(type) {
		case retryAfterer:
			return x.RetryAfter(), true
		case interface{ As(any) bool }, interface{ Unwrap() []error }:
			var ra retryAfterer
			if errors.As(err, &ra) {
				return ra.RetryAfter(), true
			}
			return 0, false
		case interface{ Unwrap() error }:
			e = x.Unwrap()
			continue
		}
		return 0, false
	}
	return 0, false
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
	// MaxRetryAfterExceeded: the last error asked, through its
	// RetryAfter method, for a wait longer than Policy.MaxRetryAfter.
	MaxRetryAfterExceeded
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
	case MaxRetryAfterExceeded:
		return "retry-after beyond the maximum"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Error is what Execute returns when it gives up after a failed attempt,
// whatever the reason. It wraps the last attempt's error, so that errors.Is
// and errors.As see it, and, when the caller's ctx stopped the retries, the
// ctx's error too (errors.Is(err, context.Canceled) holds).
//
// An Error is a plain value: it may be copied. A nil *Error is no error of
// Execute's: its Error says it is nil, and its Unwrap gives nothing.
type Error struct {
	Attempts int    // attempts made, the first included
	Last     error  // the last attempt's error
	Reason   Reason // why it stopped
	// Context is ctx.Err() when Reason is ContextDone, else nil.
	Context error
	// Cause is context.Cause(ctx) when Reason is ContextDone and the ctx
	// was cancelled with a cause of its own (context.WithCancelCause,
	// WithTimeoutCause), else nil: why the caller gave up, which
	// Context, only Canceled or DeadlineExceeded, cannot say.
	Cause error
}

// Error describes the last error, how many attempts were made and why no
// more were.
func (e *Error) Error() string {
	if e == nil {
		return "retry: <nil *Error>"
	}
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
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s + "): " + last
}

// Unwrap returns the last attempt's error, and the ctx's error and its
// cause when the ctx stopped the retries.
func (e *Error) Unwrap() []error {
	if e == nil {
		return nil
	}
	if e.Cause != nil {
		errs := make([]error, 0, 3)
		for _, err := range []error{e.Last, e.Context, e.Cause} {
			if err != nil {
				errs = append(errs, err)
			}
		}
		return errs
	}
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
