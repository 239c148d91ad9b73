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

// The sentinels themselves, defined here so that retry can ask an error's Is
// method about them (errors.Is), as a caller does: an error may be one of
// them by its Is method without wrapping it, as breaker.OpenError is
// breaker.ErrOpen, and no type of it is seen then.
var (
	Queue = New("ctxsync: closed") // ctxsync.ErrClosed
	Pool  = New("pool: closed")    // pool.ErrClosed
)

func (e *Error) Error() string { return e.msg }

// Final is the method set retry looks for, by a single errors.As, in an
// error tree (errors.Join, an error with an As method): an Error has it, and
// so has the mark of retry.Permanent. One look with one target costs one
// allocation (errors.As's target escapes) where a look for each type cost
// one each, at every failed attempt. Only this module can name Mark, so no
// error of a user's has the method by chance.
type Final interface{ Final(Mark) }

// Mark is the argument type of Final's method.
type Mark struct{}

// Final marks e as final for retry (see the Final interface).
func (*Error) Final(Mark) {}
