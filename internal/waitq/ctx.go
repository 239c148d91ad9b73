package waitq

import "context"

// CtxErr returns ctx.Err(), and panics with a message naming pkg when ctx is nil,
// as the standard library does for a nil Context.
func CtxErr(ctx context.Context, pkg string) error {
	if ctx == nil {
		PanicNilCtx(pkg)
	}
	return ctx.Err()
}

// PanicNilCtx panics, naming pkg, for a nil Context.
func PanicNilCtx(pkg string) {
	panic(pkg + ": nil Context")
}

// CheckCtx panics with a message naming pkg when ctx is nil, as the standard
// library does for a nil Context. A call that reads ctx.Err() later, under its
// lock and before it changes anything, calls it first.
func CheckCtx(ctx context.Context, pkg string) {
	if ctx == nil {
		PanicNilCtx(pkg)
	}
}

// DoneErr returns the error of a call that gave up because the Done channel
// of ctx was closed: ctx.Err(), read once no internal lock is held; or
// context.Canceled if Err is still nil. A Context may close its channel a
// moment before it stores its error (the standard library does the
// opposite, but the interface does not promise it), and a call that
// returned that nil would report a grant it never had: Lock nil without
// the lock, Get nil without an item.
func DoneErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.Canceled
}
