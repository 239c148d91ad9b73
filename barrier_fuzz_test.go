package ctxsync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// What the action of the next round to run its action does, as the script
// plans it.
const (
	planOK    = iota
	planFail  // returns errAction
	planPanic // panics; the last party's Wait panics with it
	planBlock // waits until the script unblocks it, then returns nil
)

var (
	errAction   = errors.New("the action failed")
	errPanicked = errors.New("the call panicked")
)

// A barrierParty is a Wait that has arrived, and its arrival index.
type barrierParty struct {
	w     *modelWaiter
	index int
}

// A barrierRound is a round of the model that is complete: all its parties
// arrived, the last one runs the action or waits for its turn to.
type barrierRound struct {
	parties []barrierParty // still waiting for the round to end, the last included
	last    *modelWaiter
	ended   bool // Reset or Abort ended it while its action ran
}

// barrierModel is what a Barrier should be: broken or not, the parties of the
// round gathering now, the round whose action runs, the complete rounds
// waiting for their turn to run theirs, and how many times the action ran.
type barrierModel struct {
	parties   int
	broken    bool
	gathering []barrierParty
	running   *barrierRound // blocked in its action: only a blocking action runs between steps
	queued    []*barrierRound
	actions   int
	plan      int // for the next action to run
}

// settleAll settles every party in ps with err.
func settleAll(ps []barrierParty, err error) {
	for _, p := range ps {
		p.w.settle(err)
	}
}

// arrive is a Wait by w.
func (m *barrierModel) arrive(w *modelWaiter) {
	if m.broken {
		w.settle(ctxsync.ErrBrokenBarrier)
		return
	}
	m.gathering = append(m.gathering, barrierParty{w, len(m.gathering)})
	if len(m.gathering) < m.parties {
		return
	}
	r := &barrierRound{parties: m.gathering, last: w}
	m.gathering = nil
	if m.running != nil {
		m.queued = append(m.queued, r)
		return
	}
	m.start(r)
}

// start runs the action of r, which is complete.
func (m *barrierModel) start(r *barrierRound) {
	m.running = r
	m.actions++
	plan := m.plan
	m.plan = planOK
	if plan != planBlock {
		m.finish(plan)
	}
}

// finish ends the round whose action ran as plan says, and starts the next
// one's, if a complete round waits.
func (m *barrierModel) finish(plan int) {
	r := m.running
	m.running = nil
	var others []barrierParty
	for _, p := range r.parties {
		if p.w != r.last {
			others = append(others, p)
		}
	}
	lastErr := map[int]error{planOK: ctxsync.ErrBrokenBarrier, planFail: errAction, planPanic: errPanicked}[plan]
	switch {
	case r.ended:
		r.last.settle(lastErr)
	case plan == planOK:
		for _, p := range r.parties {
			p.w.settle(nil)
			p.w.wantItem = p.index
		}
	default:
		// The barrier breaks from this round on.
		settleAll(others, ctxsync.ErrBrokenBarrier)
		r.last.settle(lastErr)
		m.breakFrom(0)
	}
	if len(m.queued) > 0 {
		next := m.queued[0]
		m.queued = m.queued[1:]
		m.start(next)
	}
}

// breakFrom breaks the barrier: the queued rounds from the i'th on and the
// gathering one end with ErrBrokenBarrier.
func (m *barrierModel) breakFrom(i int) {
	for _, r := range m.queued[i:] {
		settleAll(r.parties, ctxsync.ErrBrokenBarrier)
	}
	m.queued = m.queued[:i]
	settleAll(m.gathering, ctxsync.ErrBrokenBarrier)
	m.gathering = nil
	m.broken = true
}

// endAll is Reset or Abort: every party waiting ends with ErrBrokenBarrier,
// but the one running the action, which learns it when the action returns.
func (m *barrierModel) endAll() {
	m.breakFrom(0)
	if r := m.running; r != nil {
		for _, p := range r.parties {
			if p.w != r.last {
				p.w.settle(ctxsync.ErrBrokenBarrier)
			}
		}
		r.parties = []barrierParty{{r.last, len(r.parties) - 1}}
		r.ended = true
	}
}

// cancel ends the ctx of the arg'th party still waiting, counting the
// gathering round, the running round and the queued rounds in turn.
func (m *barrierModel) cancel(arg int) bool {
	n := len(m.gathering)
	if m.running != nil {
		n += len(m.running.parties)
	}
	for _, r := range m.queued {
		n += len(r.parties)
	}
	if n == 0 {
		return false
	}
	i := arg % n
	if i < len(m.gathering) {
		// It leaves a round that cannot complete without it.
		p := m.gathering[i]
		p.w.cancel()
		p.w.settle(context.Canceled)
		m.gathering = append(m.gathering[:i], m.gathering[i+1:]...)
		m.breakFrom(len(m.queued))
		return true
	}
	i -= len(m.gathering)
	rounds := m.queued
	if m.running != nil {
		rounds = append([]*barrierRound{m.running}, rounds...)
	}
	for ri, r := range rounds {
		if i >= len(r.parties) {
			i -= len(r.parties)
			continue
		}
		p := r.parties[i]
		p.w.cancel()
		switch {
		case r == m.running && p.w == r.last:
			// It runs the action, and ignores its ctx.
		case p.w == r.last:
			// It waited for its turn to run the action: nobody will.
			p.w.settle(context.Canceled)
			r.parties = r.parties[:i] // it arrived last
			if m.running != nil {
				ri--
			}
			m.breakFrom(ri)
		default:
			// Its round is complete: it leaves it whole.
			p.w.settle(context.Canceled)
			r.parties = append(r.parties[:i], r.parties[i+1:]...)
		}
		return true
	}
	panic("unreachable")
}

// FuzzBarrierModel checks a Barrier against barrierModel (see model_test.go):
// after each step, every Wait's outcome and arrival index, Broken, Waiting,
// and how many times the action ran. Each step is two bytes: an operation and
// its argument (which waiter's ctx to end, what the next action does). An
// action that blocks lets later rounds complete, queue for their turn, and
// meet Reset, Abort and ending contexts.
func FuzzBarrierModel(f *testing.F) {
	// Rounds of 3 with indices in order of arrival; the action fails one
	// round, which breaks the barrier until Reset.
	f.Add(uint8(3), []byte{0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0})
	// A party gives up: the barrier breaks; Abort with parties waiting.
	f.Add(uint8(2), []byte{0, 0, 1, 0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0})
	// One party: every Wait is a round of its own; one panics.
	f.Add(uint8(1), []byte{0, 0, 4, 2, 0, 0, 0, 0, 3, 0, 0, 0})
	// Reset mid-round releases the parties waiting.
	f.Add(uint8(3), []byte{0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0})
	// A blocked action: a round completes and queues, a Reset ends the
	// running round, another round completes; then the action returns.
	f.Add(uint8(2), []byte{4, 3, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 6, 0, 5, 0, 0, 0})
	// A blocked action; a queued round's last party and a gathering party
	// give up; the action fails after it is unblocked.
	f.Add(uint8(2), []byte{4, 3, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 1, 3, 4, 1, 5, 0, 3, 0, 0, 0})
	f.Fuzz(func(t *testing.T, partiesB uint8, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			m := &barrierModel{parties: 1 + int(partiesB%4)}
			actions, plan := 0, planOK // read by the action, after synctest.Wait
			gate := make(chan struct{})
			b := ctxsync.NewBarrier(m.parties, func() error {
				actions++
				p := plan
				plan = planOK
				switch p {
				case planFail:
					return errAction
				case planPanic:
					panic("the action panicked")
				case planBlock:
					<-gate
				}
				return nil
			})
			require.Equal(t, m.parties, b.Parties())
			var all []*modelWaiter
			for ; len(script) >= 2; script = script[2:] {
				switch op, arg := script[0]%7, int(script[1]); op {
				case 0, 6:
					mw := startItemWaiter(t.Context(), "Wait", func(ctx context.Context) (item any, err error) {
						defer func() {
							if recover() != nil {
								item, err = nil, errPanicked
							}
						}()
						return b.Wait(ctx)
					})
					all = append(all, mw)
					m.arrive(mw)
				case 1:
					if !m.cancel(arg) {
						continue
					}
				case 2:
					b.Abort()
					m.endAll()
					m.broken = true
				case 3:
					b.Reset()
					m.endAll()
					m.broken = false
				case 4:
					plan, m.plan = arg%4, arg%4
					continue
				case 5:
					if m.running == nil {
						continue
					}
					gate <- struct{}{}
					m.finish(planOK)
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				require.Equal(t, m.broken, b.Broken())
				require.Equal(t, len(m.gathering), b.Waiting())
				require.Equal(t, m.actions, actions, "runs of the action")
			}
			plan = planOK
			cancelAll(all)
			if m.running != nil {
				gate <- struct{}{}
			}
		})
	})
}
