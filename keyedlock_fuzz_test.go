package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// FuzzKeyedLockModel checks a KeyedLock against a lockModel per key (see
// lock_fuzz_test.go): after each step, every Lock's outcome, whether each
// key is held, and Len, the keys held or waited for. Each step is two bytes:
// an operation and its argument (the key, from three; or, for a cancellation,
// which waiter of which key).
func FuzzKeyedLockModel(f *testing.F) {
	// Two keys held at once; a waiter on one; hand-over in order.
	f.Add([]byte{0, 0, 0, 1, 0, 0, 2, 1, 2, 0, 2, 0, 1, 2, 2, 2})
	// A waiter gives up; Unlock of a free key panics; TryLock never overtakes.
	f.Add([]byte{0, 0, 0, 0, 0, 0, 3, 1, 1, 0, 2, 0, 2, 0, 2, 0, 2, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			const keys = 3
			var k ctxsync.KeyedLock[int]
			var m [keys]lockModel
			var all []*modelWaiter
			for ; len(script) >= 2; script = script[2:] {
				op, arg := script[0]%4, int(script[1])
				key := arg % keys
				switch op {
				case 0:
					mw := startWaiter(t.Context(), "Lock", func(ctx context.Context) error { return k.Lock(ctx, key) })
					all = append(all, mw)
					m[key].queue = append(m[key].queue, mw)
					m[key].handOver()
				case 1:
					want := !m[key].locked && len(m[key].queue) == 0
					require.Equal(t, want, k.TryLock(key), "TryLock(%d), locked %v, %d queued", key, m[key].locked, len(m[key].queue))
					m[key].locked = m[key].locked || want
				case 2:
					if !m[key].locked {
						require.PanicsWithValue(t, "ctxsync: Unlock of unlocked KeyedLock key", func() { k.Unlock(key) })
						continue
					}
					k.Unlock(key)
					m[key].locked = false
					m[key].handOver()
				case 3:
					if !m[key].queue.cancel(arg / keys) {
						continue
					}
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				inUse := 0
				for key := range keys {
					if m[key].locked || len(m[key].queue) > 0 {
						inUse++
					}
					free := k.TryLock(key)
					require.Equal(t, !m[key].locked && len(m[key].queue) == 0, free, "key %d free", key)
					if free {
						k.Unlock(key)
					}
				}
				require.Equal(t, inUse, k.Len())
			}
			cancelAll(all)
		})
	})
}
