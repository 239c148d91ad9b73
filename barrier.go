package ctxsync

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// ErrBrokenBarrier is returned by Barrier.Wait when the barrier is broken, or
// breaks while the caller waits: a party gave up, the action failed, or
// Reset or Abort was called.
var ErrBrokenBarrier = errors.New("ctxsync: broken barrier")

// A Barrier lets a fixed number of goroutines, its parties, meet: each calls
// Wait, and all are released together when the last one arrives. It is cyclic:
// once released, it is ready for the next round.
//
// An optional action runs once per round, in the last goroutine to arrive,
// before any party is released; it can publish the results of the round that
// ends. If it fails, the barrier breaks.
//
// A barrier breaks when a party gives up waiting (its ctx ends), when the
// action fails, or on Abort. A broken barrier refuses every Wait with
// ErrBrokenBarrier until Reset, so that a round the parties can no longer
// complete fails fast instead of hanging.
//
// Use NewBarrier; the zero Barrier is not usable. A Barrier must not be copied
// after first use. A Barrier is safe for concurrent use by multiple goroutines.
//
// In the terminology of the Go memory model, everything a party does before it
// calls Wait is synchronized before the action of that round, and the action
// is synchronized before the return of every Wait of the round.
type Barrier struct {
	_ nocopy.NoCopy

	parties int
	action  func() error

	// q holds the parties waiting for this round to end, and the goroutines
	// that arrived while a complete round's action ran, which join the next
	// round when it ends (the gate). Both are released together. Its lock
	// guards the fields below.
	q waitq.Queue[barrierWait]

	waiting int // round waiters in q
	arrived int // parties arrived this round, the last one included
	broken  bool
	gen     uint64 // counts rounds, ended by release, Reset or Abort
}

// barrierWait is the value of a waiter in Barrier.q.
type barrierWait struct {
	gate bool  // at the gate, not in the round
	err  error // granted to a round waiter: how the round ended
}

// NewBarrier returns a Barrier for parties goroutines. action, if not nil, runs
// once per round, as described on Barrier.
//
// NewBarrier panics if parties is less than 1.
func NewBarrier(parties int, action func() error) *Barrier {
	if parties < 1 {
		panic("ctxsync: NewBarrier with fewer than 1 party")
	}
	return &Barrier{parties: parties, action: action}
}

// Wait arrives at the barrier and waits until every party has arrived, then
// returns the caller's arrival index: 0 for the first to arrive, parties-1 for
// the last, each index once per round. On error the index is 0.
//
// A goroutine that arrives while the last party runs the action of a complete
// round (one whose earlier Wait returned early, say) waits for that round to
// end and arrives in the next one.
//
// It returns ErrBrokenBarrier if the barrier is broken, or breaks while the
// caller waits. The last party to arrive runs the action; if the action
// returns an error, the barrier breaks, that party's Wait returns the error
// and the others ErrBrokenBarrier. If the action panics, the barrier breaks
// likewise and the panic goes on in the last party.
//
// If ctx ends while the caller waits for the others, the caller leaves with
// ctx.Err() and the barrier breaks, releasing the others with
// ErrBrokenBarrier. Once every party has arrived, the round is complete: a
// party whose ctx ends while the action runs returns ctx.Err() without
// breaking the barrier. A ctx that is already done fails at once, without
// arriving.
func (b *Barrier) Wait(ctx context.Context) (int, error) {
	if b.parties == 0 {
		panic("ctxsync: Wait on a Barrier not made by NewBarrier")
	}
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return 0, err
	}
	b.q.Lock()
	for b.arrived == b.parties {
		// A complete round's action is running: wait at the gate for the
		// round to end, then arrive in the next one.
		g := b.q.Push(barrierWait{gate: true})
		b.q.Unlock()
		if _, ok := b.q.Wait(ctx, g); !ok {
			b.q.Lock()
			b.q.Cancel(g) // granted or not, we leave without arriving
			b.q.Unlock()
			return 0, ctx.Err()
		}
		b.q.Lock()
	}
	if b.broken {
		b.q.Unlock()
		return 0, ErrBrokenBarrier
	}
	index := b.arrived
	b.arrived++
	if b.arrived == b.parties {
		if err := b.trip(); err != nil { // unlocks b.q
			return 0, err
		}
		return index, nil
	}
	gen := b.gen
	w := b.q.Push(barrierWait{})
	b.waiting++
	b.q.Unlock()

	if v, ok := b.q.Wait(ctx, w); ok {
		if v.err != nil {
			return 0, v.err
		}
		return index, nil
	}
	b.q.Lock()
	v, granted, _ := b.q.Cancel(w)
	err := v.err
	switch {
	case granted:
		// The round ended as ctx did: report how it ended.
	case gen == b.gen && b.arrived < b.parties:
		// The others cannot complete the round without us.
		b.waiting--
		b.breakLocked()
		err = ctx.Err()
	default:
		// Every party has arrived and the action is running: the round
		// is complete without us, so we leave it whole.
		b.waiting--
		err = ctx.Err()
	}
	b.q.Unlock()
	if err != nil {
		return 0, err
	}
	return index, nil
}

// trip ends a round in the last party to arrive: it runs the action outside
// the lock, then releases the others. b.q must be locked; trip unlocks it.
func (b *Barrier) trip() error {
	gen := b.gen
	b.q.Unlock()
	err := b.runAction()
	b.q.Lock()
	switch {
	case gen != b.gen:
		// Reset or Abort ended the round while the action ran, and has
		// released the others. A failed action still reports its failure.
		if err == nil {
			err = ErrBrokenBarrier
		}
	case err != nil:
		b.breakLocked()
	default:
		b.releaseLocked(nil)
	}
	b.q.Unlock()
	if p, ok := err.(actionPanic); ok {
		panic(p.value)
	}
	return err
}

// actionPanic carries a panic of the action to the end of trip, to be
// re-raised once the barrier is broken and the others released.
type actionPanic struct{ value any }

func (p actionPanic) Error() string { return fmt.Sprint("ctxsync: Barrier action panicked: ", p.value) }

func (b *Barrier) runAction() (err error) {
	if b.action == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = actionPanic{p}
		}
	}()
	return b.action()
}

// breakLocked breaks the barrier and releases every waiter with
// ErrBrokenBarrier. b.q must be locked.
func (b *Barrier) breakLocked() {
	b.broken = true
	b.releaseLocked(ErrBrokenBarrier)
}

// releaseLocked ends the round, releasing every round waiter with err and
// every goroutine at the gate into the next round. b.q must be locked.
func (b *Barrier) releaseLocked(err error) {
	for w := b.q.Front(); w != nil; w = b.q.Front() {
		if w.Val.gate {
			b.q.Grant(w, w.Val)
		} else {
			b.q.Grant(w, barrierWait{err: err})
		}
	}
	b.waiting = 0
	b.arrived = 0
	b.gen++
}

// Reset returns the barrier to its first state: parties waiting now are
// released with ErrBrokenBarrier, a broken barrier is whole again, and the next
// Wait starts a new round.
func (b *Barrier) Reset() {
	b.q.Lock()
	b.releaseLocked(ErrBrokenBarrier)
	b.broken = false
	b.q.Unlock()
}

// Abort breaks the barrier: parties waiting now, and every later Wait until
// Reset, get ErrBrokenBarrier.
func (b *Barrier) Abort() {
	b.q.Lock()
	b.breakLocked()
	b.q.Unlock()
}

// Broken reports whether the barrier is broken.
func (b *Barrier) Broken() bool {
	b.q.Lock()
	defer b.q.Unlock()
	return b.broken
}

// Parties returns the number of parties the barrier was made for.
func (b *Barrier) Parties() int { return b.parties }

// Waiting returns the number of parties waiting in the current round at the
// moment of the call.
func (b *Barrier) Waiting() int {
	b.q.Lock()
	defer b.q.Unlock()
	return b.waiting
}
