// Package vetcopy copies a Limiter, which must not be copied after first use.
// TestVetReportsCopies runs go vet on it and expects a report of the copy.
package vetcopy

import "github.com/ctxsync/ctxsync/ratelimit/redislimit"

func copies(l *redislimit.Limiter) []any {
	return []any{*l}
}
