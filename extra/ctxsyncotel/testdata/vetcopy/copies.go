// Package vetcopy copies every exported struct type of ctxsyncotel, none of
// which may be copied. TestVetReportsCopies runs go vet on it and expects a
// report of each.
package vetcopy

import "github.com/ctxsync/ctxsync/extra/ctxsyncotel"

func copies(p *ctxsyncotel.PoolMetrics, b *ctxsyncotel.BreakerMetrics, l *ctxsyncotel.LimiterMetrics) []any {
	return []any{*p, *b, *l}
}
