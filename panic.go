package ctxsync

import (
	"errors"
	"fmt"
)

// A PanicError is what a call that runs a function of the caller's elsewhere
// (a Flight's fn, a Lazy's init, a task of package group) panics with in the
// caller's goroutine when that function panicked: the value it panicked
// with, and the stack of the goroutine that panicked, taken at the moment of
// the panic. Without the stack, the panic raised again in the caller would
// show only the call that raised it, not the code that failed.
//
// The group package's PanicError is this type.
//
// A PanicError is a plain value, free to copy.
type PanicError struct {
	Value any    // what the function passed to panic (a *runtime.PanicNilError for panic(nil))
	Stack []byte // the stack of the goroutine that panicked, as runtime/debug.Stack formats it
}

// Error returns the panic value and the stack of the goroutine that panicked.
func (p *PanicError) Error() string {
	if p == nil {
		return "ctxsync: <nil *PanicError>"
	}
	return fmt.Sprintf("ctxsync: panic: %v\n\nstack of the goroutine that panicked:\n%s", p.Value, p.Stack)
}

// Unwrap returns the panic value if it is an error, so that errors.Is and
// errors.As see through a PanicError; otherwise nil.
func (p *PanicError) Unwrap() error {
	if p == nil {
		return nil
	}
	err, _ := p.Value.(error)
	return err
}

// ErrGoexit is the error of a function that called runtime.Goexit (as
// t.FailNow does) instead of returning: a failure, since it did not finish
// its work, and one that its callers, in other goroutines, get as an error
// rather than an exit of their own goroutine.
//
// The group package's ErrGoexit is this value.
var ErrGoexit = errors.New("ctxsync: function called runtime.Goexit")
