package group

import "github.com/ctxsync/ctxsync"

// A PanicError is the value Wait (and Map, MapAll, ForEach) panics with when a
// task panicked: the value the task panicked with, and the task's stack at the
// moment of the panic. Without it the stack of the re-raised panic would show
// only Wait, not the code that failed.
//
// It is ctxsync.PanicError, the one panic type of the library: a recover
// that expects either name catches a panic from any package of it.
type PanicError = ctxsync.PanicError

// ErrGoexit is the error of a task that called runtime.Goexit (as t.FailNow
// does) instead of returning: it counts as a failure, since the task did not
// finish its work. It is ctxsync.ErrGoexit.
var ErrGoexit = ctxsync.ErrGoexit
