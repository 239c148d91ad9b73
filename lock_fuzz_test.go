package ctxsync_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// lockModel is what a Lock should be: held or not, and the queue in order.
type lockModel struct {
	locked bool
	queue  waitQueue
}

// handOver gives the lock to the oldest waiter if it is free.
func (m *lockModel) handOver() {
	if !m.locked && len(m.queue) > 0 {
		m.locked = true
		m.queue.settle(0, nil)
	}
}

// FuzzLockModel checks a Lock against lockModel (see model_test.go): after
// each step, every Lock's outcome and Locked. Each step is two bytes: an
// operation and, for a cancellation, which waiter.
func FuzzLockModel(f *testing.F) {
	// Hand-over in order; the head gives up; TryLock never overtakes.
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 0, 3, 0, 2, 0, 2, 0, 2, 0, 1, 0})
	// A waiter in the middle gives up; Unlock of an unlocked Lock panics.
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 3, 1, 2, 0, 2, 0, 2, 0, 2, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			var m lockModel
			var l ctxsync.Lock
			var all []*modelWaiter
			for ; len(script) >= 2; script = script[2:] {
				switch op, arg := script[0]%4, int(script[1]); op {
				case 0:
					mw := startWaiter(t.Context(), "Lock", l.Lock)
					all = append(all, mw)
					m.queue = append(m.queue, mw)
					m.handOver()
				case 1:
					want := !m.locked && len(m.queue) == 0
					require.Equal(t, want, l.TryLock(), "TryLock, locked %v, %d queued", m.locked, len(m.queue))
					m.locked = m.locked || want
				case 2:
					if !m.locked {
						require.PanicsWithValue(t, "ctxsync: Unlock of unlocked Lock", l.Unlock)
						continue
					}
					l.Unlock()
					m.locked = false
					m.handOver()
				case 3:
					if !m.queue.cancel(arg) {
						continue
					}
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				require.Equal(t, m.locked, l.Locked())
			}
			cancelAll(all)
		})
	})
}
