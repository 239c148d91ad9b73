package group

import (
	"errors"
	"fmt"
)

// A PanicError is the value Wait (and Map, MapAll, ForEach) panics with when a
// task panicked: the value the task panicked with, and the task's stack at the
// moment of the panic. Without it the stack of the re-raised panic would show
// only Wait, not the code that failed.
//
// A PanicError is a plain value, free to copy.
type PanicError struct {
	Value any    // what the task passed to panic (a *runtime.PanicNilError for panic(nil))
	Stack []byte // the task's goroutine stack, as runtime/debug.Stack formats it
}

// Error returns the panic value and the task's stack.
func (p *PanicError) Error() string {
	if p == nil {
		return "group: <nil *PanicError>"
	}
	return fmt.Sprintf("group: task panicked: %v\n\ntask's stack:\n%s", p.Value, p.Stack)
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

// ErrGoexit is the error of a task that called runtime.Goexit (as t.FailNow
// does) instead of returning: it counts as a failure, since the task did not
// finish its work.
var ErrGoexit = errors.New("group: task called runtime.Goexit")
