package ctxsync_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// eventModel is what an Event should be: set or not, the goroutines waiting,
// and which run of the flag it is in (a Clear of a set Event starts the next).
type eventModel struct {
	set     bool
	waiting waitQueue
	run     int
}

func (m *eventModel) setFlag() {
	if m.set {
		return
	}
	m.set = true
	for _, w := range m.waiting {
		w.settle(nil)
	}
	m.waiting = nil
}

func (m *eventModel) clear() {
	if m.set {
		m.set = false
		m.run++
	}
}

// FuzzEventModel checks an Event against eventModel (see model_test.go):
// after each step, every Wait's outcome, IsSet, and whether every channel
// Done has handed out is closed: a channel of an earlier run, or of this run
// while the flag is raised. Done hands out one channel per run. Each step is two bytes: an operation and its
// argument (which waiter's ctx to end).
func FuzzEventModel(f *testing.F) {
	// Waiters woken by Set; Wait on a set Event returns at once; Clear.
	f.Add([]byte{0, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 2, 0})
	// Set then Clear at once still wakes the waiters; Done's channels.
	f.Add([]byte{5, 0, 0, 0, 0, 0, 5, 0, 4, 0, 5, 0, 0, 0, 2, 0, 5, 0, 3, 0, 5, 0})
	// A waiter gives up; the others still wake.
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 2, 0})
	// Done with nobody waiting: Set must close the channel, not drop it.
	f.Add([]byte{5, 0, 2, 0, 5, 0, 3, 0, 5, 0, 0, 0, 1, 0, 2, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			var m eventModel
			var e ctxsync.Event
			type handedOut struct {
				ch  <-chan struct{}
				run int
			}
			var chans []handedOut
			var all []*modelWaiter
			for ; len(script) >= 2; script = script[2:] {
				switch op, arg := script[0]%6, int(script[1]); op {
				case 0:
					mw := startWaiter(t.Context(), "Wait", e.Wait)
					all = append(all, mw)
					if m.set {
						mw.settle(nil)
					} else {
						m.waiting = append(m.waiting, mw)
					}
				case 1:
					if !m.waiting.cancel(arg) {
						continue
					}
				case 2:
					e.Set()
					m.setFlag()
				case 3:
					e.Clear()
					m.clear()
				case 4:
					e.Set()
					e.Clear()
					m.setFlag()
					m.clear()
				case 5:
					ch := e.Done()
					if n := len(chans); n > 0 && chans[n-1].run == m.run {
						require.Equal(t, chans[n-1].ch, ch, "Done twice in one run")
					}
					chans = append(chans, handedOut{ch, m.run})
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				require.Equal(t, m.set, e.IsSet())
				for i, h := range chans {
					want := h.run < m.run || m.set
					require.Equal(t, want, isClosed(h.ch), "channel %d of run %d, now run %d, set %v", i, h.run, m.run, m.set)
				}
			}
			cancelAll(all)
		})
	})
}
