package vetcopy

import "github.com/ctxsync/ctxsync"

// copiesWaitGroup copies the WaitGroup and the KeyedLock, in a file of their
// own so that the types added beside them each keep to theirs.
func copiesWaitGroup(wg *ctxsync.WaitGroup, keyed *ctxsync.KeyedLock[string]) []any {
	return []any{*wg, *keyed}
}
