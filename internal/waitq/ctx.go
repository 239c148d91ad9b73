package waitq

import "context"

// CtxErr returns ctx.Err(), and panics with a message naming pkg when ctx is nil,
// as the standard library does for a nil Context.
func CtxErr(ctx context.Context, pkg string) error {
	if ctx == nil {
		panicNilCtx(pkg)
	}
	return ctx.Err()
}

func panicNilCtx(pkg string) {
	panic(pkg + ": nil Context")
}

// CheckCtx panics with a message naming pkg when ctx is nil, as the standard
// library does for a nil Context. Fast paths that take first and look at ctx
// after (see Lock.Lock) call it before they take anything.
func CheckCtx(ctx context.Context, pkg string) {
	if ctx == nil {
		panicNilCtx(pkg)
	}
}
