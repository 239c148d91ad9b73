package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// rwModel is what an RWLock should be: how many readers hold it, whether a
// writer does, and the queue in order.
type rwModel struct {
	readers int
	writer  bool
	queue   []rwQueued
}

type rwQueued struct {
	writer bool
	w      *modelWaiter
}

// dispatch lets in the head of the queue while it may enter: every reader up
// to the first writer if no writer holds the lock, then that writer once the
// lock is free.
func (m *rwModel) dispatch() {
	for len(m.queue) > 0 && !m.writer {
		if m.queue[0].writer {
			if m.readers > 0 {
				return
			}
			m.writer = true
		} else {
			m.readers++
		}
		m.remove(0, nil)
	}
}

func (m *rwModel) remove(i int, err error) {
	m.queue[i].w.settle(err)
	m.queue = append(m.queue[:i], m.queue[i+1:]...)
}

// FuzzRWLockModel checks an RWLock against rwModel (see model_test.go): after
// each step, every RLock's and Lock's outcome. Each step is two bytes: an
// operation and, for a cancellation, which waiter.
func FuzzRWLockModel(f *testing.F) {
	// A writer waits for the readers; readers behind it wait for it.
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0, 4, 0, 5, 0})
	// The writer gives up: the readers behind it enter.
	f.Add([]byte{0, 0, 1, 0, 0, 0, 0, 0, 6, 0, 4, 0})
	// Readers queued before the next writer enter together at Unlock.
	f.Add([]byte{1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 4, 0, 4, 0, 5, 0, 4, 0})
	// TryLock and TryRLock never overtake; misuse panics and changes nothing.
	f.Add([]byte{4, 0, 5, 0, 2, 0, 3, 0, 1, 0, 2, 0, 3, 0, 4, 0, 3, 0, 5, 0})
	// A reader in the middle gives up; the head gives up.
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 6, 1, 6, 0, 5, 0, 5, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			var m rwModel
			var rw ctxsync.RWLock
			var all []*modelWaiter
			for ; len(script) >= 2; script = script[2:] {
				switch op, arg := script[0]%7, int(script[1]); op {
				case 0, 1:
					writer, name, lock := op == 1, "RLock", rw.RLock
					if writer {
						name, lock = "Lock", rw.Lock
					}
					mw := startWaiter(t.Context(), name, lock)
					all = append(all, mw)
					m.queue = append(m.queue, rwQueued{writer, mw})
					if len(m.queue) == 1 {
						m.dispatch()
					}
				case 2:
					want := len(m.queue) == 0 && !m.writer
					require.Equal(t, want, rw.TryRLock(), "TryRLock with %d readers, writer %v, %d queued", m.readers, m.writer, len(m.queue))
					if want {
						m.readers++
					}
				case 3:
					want := len(m.queue) == 0 && !m.writer && m.readers == 0
					require.Equal(t, want, rw.TryLock(), "TryLock with %d readers, writer %v, %d queued", m.readers, m.writer, len(m.queue))
					m.writer = m.writer || want
				case 4:
					if m.readers == 0 {
						require.PanicsWithValue(t, "ctxsync: RUnlock of RWLock not locked for reading", rw.RUnlock)
						continue
					}
					rw.RUnlock()
					m.readers--
					m.dispatch()
				case 5:
					if !m.writer {
						require.PanicsWithValue(t, "ctxsync: Unlock of RWLock not locked for writing", rw.Unlock)
						continue
					}
					rw.Unlock()
					m.writer = false
					m.dispatch()
				case 6:
					if len(m.queue) == 0 {
						continue
					}
					i := arg % len(m.queue)
					m.queue[i].w.cancel()
					m.remove(i, context.Canceled)
					m.dispatch()
				}
				synctest.Wait()
				all = checkWaiters(t, all)
			}
			cancelAll(all)
		})
	})
}
