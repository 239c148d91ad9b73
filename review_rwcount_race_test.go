package ctxsync_test

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestRWLockLookRace runs readers and writers with random cancellation beside
// readers whose look at ctx is followed, inside their ctx's Err, by the end of
// the ctx and a writer's TryLock and Unlock. When that TryLock succeeds, a
// writer held the lock after the reader's ctx ended and freed it then: the
// reader can be placed neither before that writer (it would have held the
// lock with the writer) nor after it (its ctx had ended), so RLock must fail.
// Alongside: readers and writers exclude each other, and the lock ends free.
func TestRWLockLookRace(t *testing.T) {
	for round := range testutil.HammerRounds(20) {
		rw := ctxsync.NewRWLock()
		var readers, writers atomic.Int32
		write := func() {
			if writers.Add(1) != 1 || readers.Load() != 0 {
				panic("writer not alone")
			}
			writers.Add(-1)
		}
		read := func() {
			readers.Add(1)
			if writers.Load() != 0 {
				panic("reader with writer")
			}
			readers.Add(-1)
		}
		cxRun(6, func(id int, r *rand.Rand) {
			for range 300 {
				ctx, cancel := cxCtx(r)
				switch k := r.IntN(5); {
				case k == 0:
					if rw.Lock(ctx) == nil {
						write()
						rw.Unlock()
					}
				case k == 1 && id%2 == 0:
					// Many quick writers: the count of releases moves
					// while the readers look.
					for range 4 {
						if rw.TryLock() {
							write()
							rw.Unlock()
						}
					}
				case k == 2:
					inner, end := context.WithCancel(context.Background())
					took := false
					hc := &hookCtx{Context: inner, hook: func() {
						end()
						if took = rw.TryLock(); took {
							write()
							rw.Unlock()
						}
					}}
					err := rw.RLock(hc)
					if err == nil {
						read()
						rw.RUnlock()
					}
					if took && err == nil {
						panic("RLock took a lock freed after its ctx ended")
					}
					end()
				default:
					if rw.RLock(ctx) == nil {
						read()
						time.Sleep(time.Duration(r.IntN(2)) * time.Microsecond)
						rw.RUnlock()
					}
				}
				cancel()
			}
		})
		require.Zero(t, rw.Waiting(), "round %d", round)
		require.True(t, rw.TryLock(), "round %d: RWLock not free", round)
		rw.Unlock()
		require.True(t, rw.TryRLock())
		rw.RUnlock()
	}
}
