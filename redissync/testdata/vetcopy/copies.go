// Package vetcopy copies every stateful type of redissync, which must not be
// copied. TestVetReportsCopies runs go vet on it and expects a report of each.
package vetcopy

import "github.com/ctxsync/ctxsync/redissync"

func copies(s *redissync.Semaphore, p *redissync.Permit, k *redissync.Keyed) []any {
	return []any{*s, *p, *k}
}
