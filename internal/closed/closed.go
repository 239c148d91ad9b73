// Package closed gives the library's closed-for-good sentinels (a Queue's,
// a Watch's, a Pool's ErrClosed) a type of their own, so that retry can
// tell them from every other error without importing the packages that
// define them: pool imports breaker, whose tests import retry.
package closed

// An Error is the sentinel of a type that, once closed, never opens again:
// no later attempt of a call that met it can succeed.
type Error struct{ msg string }

// New returns a sentinel with the message msg.
func New(msg string) error { return &Error{msg: msg} }

func (e *Error) Error() string { return e.msg }
