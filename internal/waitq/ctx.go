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
