package ctxsync

import (
	"context"
	"errors"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// ErrBrokenBarrier is returned by Barrier.Wait when the barrier is broken, or
// breaks while the caller waits: a party gave up, the action failed, or
// Reset or Abort was called.
var ErrBrokenBarrier = errors.New("ctxsync: broken barrier")

// A Barrier lets a fixed number of goroutines, its parties, meet: each calls
// Wait, and all are released together when the last one arrives. It is cyclic:
// once a round is complete, the next party to arrive starts the next round.
//
// An optional action runs once per round, in the last goroutine to arrive,
// before any party of the round is released; it can publish the results of
// the round that ends. If it fails, the barrier breaks. Two actions of one
// Barrier never run at the same time: a round that completes while the action
// of an earlier one runs (possible when more goroutines than parties use the
// barrier, or after a Reset) waits for it to return before its own action
// runs.
//
// A barrier breaks when a party gives up waiting (its ctx ends) before its
// round is complete, when the action fails, or on Abort. A broken barrier
// refuses every Wait with ErrBrokenBarrier until Reset, so that a round the
// parties can no longer complete fails fast instead of hanging. A break ends
// the round in which it happens and every later one; a round that was already
// complete still ends as its action says (Abort and Reset alone end those
// too).
//
// Use NewBarrier; the zero Barrier is not usable, and its Wait panics. A
// Barrier must not be copied after first use. A Barrier is safe for concurrent
// use by multiple goroutines.
//
// In the terminology of the Go memory model, everything a party does before it
// calls Wait is synchronized before the action of that round, the action is
// synchronized before the return of every Wait of the round, and each action
// is synchronized before the next one starts.
type Barrier struct {
	_ nocopy.NoCopy

	parties int
	action  func() error

	// q holds the parties waiting for their round to end, and the last party
	// of each complete round whose action waits for an earlier action to
	// return. Rounds are numbered in the order they start, so q is in round
	// order. Its lock guards the fields below.
	q waitq.Queue[barrierWait]

	round   uint64 // the round gathering parties now; rounds below it are complete or ended
	arrived int    // parties arrived in that round, each waiting in q
	broken  bool

	// running is set from the moment a round's last party is to run the
	// action until the action has returned and the round is settled, so that
	// no two actions overlap. The last party of a round that completes
	// meanwhile waits in q with turn set, and is handed the turn by the
	// party that ran the action before it.
	running  bool
	runRound uint64 // the round whose action runs, while running
	runEnded bool   // Reset or Abort ended that round while its action ran
}

// barrierWait is the value of a waiter in Barrier.q.
type barrierWait struct {
	round uint64 // the round the party arrived in
	turn  bool   // the last party of a complete round, waiting to run its action

	// err is granted: how the round ended for a party (nil: released), or,
	// for a turn waiter, nil to run the action and an error if its round
	// ended before it could.
	err error

	// gone is set by the party itself, not granted: its ctx ended before its
	// round ended, and it returns ctx.Err().
	gone bool
}

// NewBarrier returns a Barrier for parties goroutines. action, if not nil, runs
// once per round, as described on Barrier. Any positive number of parties is
// allowed; nothing is allocated per party in advance.
//
// NewBarrier panics if parties is less than 1.
func NewBarrier(parties int, action func() error) *Barrier {
	if parties < 1 {
		panic("ctxsync: NewBarrier with fewer than 1 party")
	}
	return &Barrier{parties: parties, action: action}
}

// Wait arrives at the barrier and waits until every party of the round has
// arrived and the round's action has run, then returns the caller's arrival
// index: 0 for the first to arrive, parties-1 for the last, each index once
// per round. On error the index is 0.
//
// Parties arrive in the order in which they call Wait. A goroutine that calls
// Wait while the last party of a round runs the action arrives at once in the
// next round, ahead of any goroutine that calls Wait after it.
//
// It returns ErrBrokenBarrier if the barrier is broken, or breaks while the
// caller waits. The last party to arrive runs the action; if the action
// returns an error, the barrier breaks, that party's Wait returns the error
// and the others, in this round and in any later one, ErrBrokenBarrier. If
// the action panics (or calls runtime.Goexit), the barrier breaks likewise and
// the panic goes on in the last party, the barrier whole and broken, ready for
// Reset.
//
// If ctx ends while the caller waits for the others, the caller leaves with
// ctx.Err() and the barrier breaks, releasing the others with
// ErrBrokenBarrier. Once every party has arrived, the round is complete: a
// party whose ctx ends while the action runs returns ctx.Err() without
// breaking the barrier. The last party of a complete round is the exception
// when it must wait for the action of an earlier round: if its ctx ends first,
// its round's action never runs, so the barrier breaks. If its ctx ends just
// as the earlier action returns, it may run its own round's action all the
// same: a party handed its turn as its ctx ends keeps the turn, as a grant
// that races a cancellation is kept everywhere in the package. A ctx that is
// already done fails at once, without arriving.
//
// The action may call Parties, Waiting, Broken, Reset and Abort. It must not
// call Wait: a Wait from the action arrives in the next round, which cannot
// end before the action that called it has returned, so it can only fail, when
// its ctx ends or a Reset or Abort releases it.
func (b *Barrier) Wait(ctx context.Context) (int, error) {
	if b.parties == 0 {
		panic("ctxsync: Barrier.Wait on a zero Barrier; use NewBarrier")
	}
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return 0, err
	}
	done := ctx.Done() // before the lock: the caller's code (see waitq.Ended)
	b.q.Lock()
	if b.broken {
		b.q.Unlock()
		return 0, ErrBrokenBarrier
	}
	round, index := b.round, b.arrived
	b.arrived++
	if b.arrived < b.parties {
		return b.await(ctx, done, round, index)
	}
	if b.goneLocked(round, index) {
		// A party of the round gave up (its ctx ended) before we came: it
		// must not be released as if the round had completed. Its Wait
		// returns ctx.Err(); the round breaks.
		b.breakFromLocked(round)
		b.q.Unlock()
		return 0, ErrBrokenBarrier
	}
	// The round is complete. The next goroutine to arrive starts the next
	// round at once, even while this round's action runs: it arrived first,
	// and must not be overtaken by those that arrive after the action.
	b.round++
	b.arrived = 0
	if b.running {
		return b.awaitTurn(ctx, done, round, index)
	}
	if b.action == nil {
		// No user code to run: release the round without unlocking.
		b.releaseLocked(round)
		b.q.Unlock()
		return index, nil
	}
	b.running, b.runRound = true, round
	b.q.Unlock()
	return b.trip(round, index)
}

// goneLocked reports whether a party of round, the round that gathers parties,
// has given up: of the n that arrived before the caller, one whose ctx has
// ended waits still. Front and Next drop such a party (see
// waitq.List.Front), and its Wait, when it runs, returns ctx.Err(). b.q must
// be locked.
func (b *Barrier) goneLocked(round uint64, n int) bool {
	live := 0
	for w := b.q.Front(); w != nil; w = b.q.Next(w) {
		if w.Val.round == round && !w.Val.turn {
			live++
		}
	}
	return live < n
}

// await waits, as a party that is not the last, for round to end. b.q must be
// locked; await unlocks it.
//
// The party queues with its ctx's Done channel, done (PushDone): once the ctx
// has ended it is
// never released as if its round had completed. If its round is still
// gathering, the round breaks (by its own Wait, or by the last party's
// goneLocked, whichever runs first); if the round completed before its ctx
// ended, it returns ctx.Err() without breaking it.
func (b *Barrier) await(ctx context.Context, done <-chan struct{}, round uint64, index int) (int, error) {
	w := b.q.PushDone(done, barrierWait{round: round})
	b.q.Unlock()
	v, ok := b.q.Wait(done, w)
	if !ok {
		b.q.Lock()
		var granted bool
		if v, granted, _ = b.q.Cancel(w); !granted {
			v.gone = true // ctx.Err() is read once unlocked: the caller's code
			if round == b.round {
				// The round still gathers parties, and cannot complete
				// without this one.
				b.breakFromLocked(round)
			}
			// Otherwise the round is complete, its action to come: it
			// ends well without us.
		}
		// Granted as ctx ended: the round ended first, report how.
		b.q.Unlock()
	}
	if v.gone {
		return 0, waitq.DoneErr(ctx)
	}
	if v.err != nil {
		return 0, v.err
	}
	return index, nil
}

// awaitTurn waits, as the last party of a complete round, for the action of an
// earlier round to return, then runs its own. b.q must be locked; awaitTurn
// unlocks it.
func (b *Barrier) awaitTurn(ctx context.Context, done <-chan struct{}, round uint64, index int) (int, error) {
	w := b.q.Push(barrierWait{round: round, turn: true})
	b.q.Unlock()
	v, ok := b.q.Wait(done, w)
	if !ok {
		b.q.Lock()
		var granted bool
		if v, granted, _ = b.q.Cancel(w); !granted {
			// Nobody else would run the action of our round, and its
			// parties must not be released without it.
			b.breakFromLocked(round)
			b.q.Unlock()
			return 0, waitq.DoneErr(ctx)
		}
		// Handed the turn as ctx ended: the round is complete and its
		// parties wait for its action, so run it all the same.
		b.q.Unlock()
	}
	if v.err != nil {
		return 0, v.err
	}
	return b.trip(round, index) // b.running was kept set for us
}

// trip runs the action of round, which is complete, in its last party, outside
// the lock, then ends the round and hands the turn on. b.action must not be
// nil, and b.running must be set for round.
func (b *Barrier) trip(round uint64, index int) (int, error) {
	returned := false
	defer func() {
		if !returned {
			// The action panicked or called runtime.Goexit: break the
			// barrier and let the panic go on, with the barrier whole.
			b.endRound(round, errActionPanicked)
		}
	}()
	err := b.action()
	returned = true
	if err = b.endRound(round, err); err != nil {
		return 0, err
	}
	return index, nil
}

// errActionPanicked stands, in endRound, for an action that did not return.
var errActionPanicked = errors.New("ctxsync: Barrier action panicked")

// endRound settles round after its action returned err, hands the turn to the
// next complete round, if one waits, and returns the result of the last
// party's Wait.
func (b *Barrier) endRound(round uint64, err error) error {
	b.q.Lock()
	defer b.q.Unlock()
	ended := b.runEnded
	b.running, b.runEnded = false, false
	switch {
	case ended:
		// Reset or Abort ended the round while the action ran, and has
		// released its parties. A failed action still reports its failure.
		if err == nil {
			err = ErrBrokenBarrier
		}
	case err != nil:
		b.breakFromLocked(round)
	default:
		b.releaseLocked(round)
	}
	// Rounds end in order, so the oldest turn waiter is the next round to
	// run its action.
	for w := b.q.Front(); w != nil; w = b.q.Next(w) {
		if w.Val.turn {
			b.running, b.runRound = true, w.Val.round
			b.q.Grant(w, barrierWait{})
			break
		}
	}
	return err
}

// releaseLocked ends round, which is complete, releasing its parties. They
// are at the front of q: every earlier round has ended. b.q must be locked.
func (b *Barrier) releaseLocked(round uint64) {
	for w := b.q.Front(); w != nil && w.Val.round == round; w = b.q.Front() {
		b.q.Grant(w, barrierWait{})
	}
}

// breakFromLocked breaks the barrier at round: the parties of that round and
// of every later one are released with ErrBrokenBarrier, and the round that
// gathers parties starts afresh. Earlier rounds are complete, and end as their
// actions say. b.q must be locked.
func (b *Barrier) breakFromLocked(round uint64) {
	b.broken = true
	b.endFromLocked(round)
}

// endFromLocked ends round and every later one, releasing their parties with
// ErrBrokenBarrier, without breaking the barrier. b.q must be locked.
func (b *Barrier) endFromLocked(round uint64) {
	for w := b.q.Front(); w != nil; {
		next := b.q.Next(w) // before the grant, which unlinks w
		if w.Val.round >= round {
			b.q.Grant(w, barrierWait{err: ErrBrokenBarrier})
		}
		w = next
	}
	if b.running && b.runRound >= round {
		b.runEnded = true
	}
	// Parties that arrive from now on start a new round.
	b.round++
	b.arrived = 0
}

// Reset returns the barrier to its first state: parties waiting now, in every
// round, are released with ErrBrokenBarrier, a broken barrier is whole again,
// and the next Wait starts a new round. If an action is running, its round
// ends with ErrBrokenBarrier for its last party too, and the action of a round
// completed after the Reset waits for it to return before it runs.
func (b *Barrier) Reset() {
	b.q.Lock()
	b.endFromLocked(0)
	b.broken = false
	b.q.Unlock()
}

// Abort breaks the barrier: parties waiting now, in every round, and every
// later Wait until Reset, get ErrBrokenBarrier. If an action is running, its
// round ends with ErrBrokenBarrier for its last party too.
func (b *Barrier) Abort() {
	b.q.Lock()
	b.breakFromLocked(0)
	b.q.Unlock()
}

// Broken reports whether the barrier is broken. A party of the round that
// gathers parties whose ctx has ended breaks it, and Broken sees that at once,
// without waiting for that party's Wait to return.
//
// To see that, Broken looks at the Done channel of every party waiting, so
// it is not a look from afar in a testing/synctest bubble: while parties wait
// inside a bubble, a call of Broken from outside the bubble is a fatal error
// of the Go runtime, as a Wait, Reset or Abort from there is (see "Testing
// with synctest" in the package documentation). Its cost grows with the
// number of parties waiting.
func (b *Barrier) Broken() bool {
	b.q.Lock()
	defer b.q.Unlock()
	if !b.broken && b.arrived > 0 && b.goneLocked(b.round, b.arrived) {
		// The round can no longer complete. Its parties learn of it when
		// their goroutines run again; a look made before then would see a
		// whole barrier, and its caller would not Reset it. Break it now,
		// as that party's Wait, or the last party's arrival, would.
		b.breakFromLocked(b.round)
	}
	return b.broken
}

// Parties returns the number of parties the barrier was made for.
func (b *Barrier) Parties() int { return b.parties }

// Waiting returns the number of parties that have arrived, at the moment of
// the call, in the round that gathers parties now. The parties of a complete
// round whose action runs are not counted.
func (b *Barrier) Waiting() int {
	b.q.Lock()
	defer b.q.Unlock()
	return b.arrived
}
