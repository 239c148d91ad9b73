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
