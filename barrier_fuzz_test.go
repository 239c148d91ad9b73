package ctxsync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// barrierModel is what a Barrier should be: broken or not, the parties waiting
// in the current round in order of arrival, and how many times the action ran.
type barrierModel struct {
	parties int
	broken  bool
	arrived []*modelWaiter
	actions int
}

// breakRound breaks the barrier: every party waiting gets ErrBrokenBarrier.
func (m *barrierModel) breakRound() {
	for _, w := range m.arrived {
		w.settle(ctxsync.ErrBrokenBarrier)
	}
	m.arrived = nil
}

var errAction = errors.New("the action failed")

// FuzzBarrierModel checks a Barrier against barrierModel (see model_test.go):
// after each step, every Wait's outcome and arrival index, Broken, Waiting,
// and how many times the action ran. Each step is two bytes: an operation and
// its argument (which waiter's ctx to end).
func FuzzBarrierModel(f *testing.F) {
	// Rounds of 3 with indices in order of arrival; the action fails one
	// round, which breaks the barrier until Reset.
	f.Add(uint8(3), []byte{0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0})
	// A party gives up: the barrier breaks; Abort with parties waiting.
	f.Add(uint8(2), []byte{0, 0, 1, 0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0})
	// One party: every Wait is a round of its own.
	f.Add(uint8(1), []byte{0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 3, 0, 0, 0})
	// Reset mid-round releases the parties waiting.
	f.Add(uint8(3), []byte{0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, partiesB uint8, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			m := &barrierModel{parties: 1 + int(partiesB%4)}
			actions, fail := 0, false
			b := ctxsync.NewBarrier(m.parties, func() error {
				actions++
				if fail {
					fail = false
					return errAction
				}
				return nil
			})
			require.Equal(t, m.parties, b.Parties())
			failNext := false // the script's intent: the next action fails
			var all []*modelWaiter
			for ; len(script) >= 2; script = script[2:] {
				switch op, arg := script[0]%5, int(script[1]); op {
				case 0:
					fail = failNext // read by the action, after synctest.Wait
					mw := startItemWaiter(t.Context(), "Wait", func(ctx context.Context) (any, error) {
						return b.Wait(ctx)
					})
					all = append(all, mw)
					if m.broken {
						mw.settle(ctxsync.ErrBrokenBarrier)
						break
					}
					m.arrived = append(m.arrived, mw)
					if len(m.arrived) < m.parties {
						break
					}
					m.actions++
					last := m.arrived[len(m.arrived)-1]
					if failNext {
						failNext = false
						m.arrived = m.arrived[:len(m.arrived)-1]
						m.breakRound()
						m.broken = true
						last.settle(errAction)
						break
					}
					for i, w := range m.arrived {
						w.settle(nil)
						w.wantItem = i
					}
					m.arrived = nil
				case 1:
					if len(m.arrived) == 0 {
						continue
					}
					i := arg % len(m.arrived)
					w := m.arrived[i]
					w.cancel()
					m.arrived = append(m.arrived[:i], m.arrived[i+1:]...)
					w.settle(context.Canceled)
					m.breakRound()
					m.broken = true
				case 2:
					b.Abort()
					m.breakRound()
					m.broken = true
				case 3:
					b.Reset()
					m.breakRound()
					m.broken = false
				case 4:
					failNext = true
					continue
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				require.Equal(t, m.broken, b.Broken())
				require.Equal(t, len(m.arrived), b.Waiting())
				require.Equal(t, m.actions, actions, "runs of the action")
			}
			cancelAll(all)
		})
	})
}
