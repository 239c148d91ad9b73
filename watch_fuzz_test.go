package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// watchModel is what a Watch should be: its value, version and whether it is
// closed, and the Waits not yet returned, each with its after.
type watchModel struct {
	v       int
	ver     uint64
	closed  bool
	waiting waitQueue
	afters  map[*modelWaiter]uint64
}

// watchItem is what a Wait got, as a modelWaiter's item.
type watchItem struct {
	v   int
	ver uint64
}

func (m *watchModel) store(v int) {
	if m.closed {
		return
	}
	m.v, m.ver = v, m.ver+1
	m.settleNewer()
}

// settleNewer returns the Waits whose after is below the version.
func (m *watchModel) settleNewer() {
	for i := 0; i < len(m.waiting); {
		if mw := m.waiting[i]; m.afters[mw] < m.ver {
			mw.wantItem = watchItem{m.v, m.ver}
			m.waiting.settle(i, nil)
			continue
		}
		i++
	}
}

func (m *watchModel) close() {
	m.closed = true
	for len(m.waiting) > 0 {
		m.waiting.settle(0, ctxsync.ErrClosed)
	}
}

// FuzzWatchModel checks a Watch against watchModel (see model_test.go): after
// each step, every Wait's outcome and what Load returns. Each step is two
// bytes: an operation and its argument (a value to store, how far after the
// current version a Wait starts, or which waiter's ctx to end).
func FuzzWatchModel(f *testing.F) {
	// Waits at and before the current version; a Store wakes the first.
	f.Add([]byte{0, 0, 0, 1, 1, 5, 0, 0})
	// A Wait two versions ahead needs two Stores; one waiter gives up.
	f.Add([]byte{0, 2, 0, 0, 2, 0, 1, 7, 1, 8})
	// Close with waiters; then an old after still gets the value; Store is
	// dropped.
	f.Add([]byte{1, 3, 0, 0, 3, 0, 0, 1, 1, 4, 0, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			m := watchModel{ver: 1, afters: map[*modelWaiter]uint64{}}
			var w ctxsync.Watch[int] // the zero Watch: 0 at version 1
			var all []*modelWaiter
			for ; len(script) >= 2; script = script[2:] {
				switch op, arg := script[0]%4, int(script[1]); op {
				case 0:
					// after runs from two below the version to two above.
					after := uint64(max(0, int(m.ver)+arg%5-2))
					mw := startItemWaiter(t.Context(), "Wait", func(ctx context.Context) (any, error) {
						v, ver, err := w.Wait(ctx, after)
						return watchItem{v, ver}, err
					})
					all = append(all, mw)
					m.afters[mw] = after
					m.waiting = append(m.waiting, mw)
					if m.ver > after {
						m.settleNewer()
					} else if m.closed {
						m.waiting.settle(len(m.waiting)-1, ctxsync.ErrClosed)
					}
				case 1:
					w.Store(arg)
					m.store(arg)
				case 2:
					if !m.waiting.cancel(arg) {
						continue
					}
				case 3:
					if arg%4 != 0 {
						continue // Close rarely, so that scripts go on
					}
					w.Close()
					m.close()
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				v, ver := w.Load()
				require.Equal(t, watchItem{m.v, m.ver}, watchItem{v, ver}, "Load")
				require.Equal(t, len(m.waiting), ctxsync.WatchWaiting(&w), "goroutines waiting")
			}
			cancelAll(all)
		})
	})
}
