package vetcopy

import (
	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// copiesAdded copies the types added after copies.go, in a file of their own.
func copiesAdded(all *ratelimit.Combined, l *adaptive.Limiter, t *adaptive.Ticket) []any {
	return []any{*all, *l, *t}
}
