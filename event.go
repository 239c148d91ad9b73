package ctxsync

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// An Event is a flag that goroutines wait for: Set raises it and wakes every
// waiter, Clear lowers it again, and Wait blocks until it is raised.
//
// The zero Event is unset and ready to use. An Event must not be copied after
// first use. An Event is safe for concurrent use by multiple goroutines.
//
// In the terminology of the Go memory model, a call to Set is synchronized
// before the return of any Wait that it unblocks, and before any receive from
// Done that it unblocks.
//
// Unlike the other primitives, an Event keeps no queue of waiters: Set wakes
// them all, which closing one channel does at the lowest cost, and Done must
// hand out a channel anyway. Each run of the flag from raised to lowered has
// its own channel. A waiter that saw the flag raised holds that run's closed
// channel, so it wakes even if Clear follows at once.
type Event struct {
	_ nocopy.NoCopy

	set atomic.Bool // the flag, for IsSet and the fast path of Wait

	// holders is gen<<32 | count. The count is the goroutines in Wait that
	// hold the current channel while it is open; the generation moves when
	// the channel is replaced and when Set closes it, and only then, with mu
	// held. So a waiter that loads the word, then the channel, and then
	// counts itself by a compare-and-swap on the word, holds the channel
	// of the word's generation (see join).
	//
	// The count rises from zero only with mu held, after chLocked; above
	// zero it rises without the lock. Set starts a generation with a count
	// of zero, so the waiters it wakes leave without a word, and only a
	// waiter that gives up while the channel is open takes itself off, with
	// mu held, if its generation is still the current one. A read under mu
	// that finds the count zero is exact: nobody can join without mu until
	// it is above zero again.
	holders atomic.Uint64

	mu sync.Mutex
	// ch holds a chan struct{} that is closed while the flag is raised, or a
	// nil one when none is needed yet. Written with mu held.
	ch atomic.Value
	// shared reports that Done handed ch out, so it must stay until Clear.
	shared bool // guarded by mu
}

const (
	holderCount = 1<<32 - 1 // the count in Event.holders
	holderGen   = 1 << 32   // one generation in Event.holders
)

// NewEvent returns a new, unset Event. It is the same as new(Event).
func NewEvent() *Event { return new(Event) }

func (e *Event) loadCh() chan struct{} {
	ch, _ := e.ch.Load().(chan struct{})
	return ch
}

// chLocked returns the channel of the current run, making it if need be. e.mu
// must be held.
//
// A channel that no goroutine holds and that Done never handed out is replaced
// by one made now, by the calling goroutine: a channel made inside a
// testing/synctest bubble is fatal to use outside it, and an Event may outlive
// the bubble that first waited on it (see internal/waitq for the same rule).
func (e *Event) chLocked() chan struct{} {
	ch := e.loadCh()
	if ch == nil || (!e.shared && e.holders.Load()&holderCount == 0) {
		ch = make(chan struct{})
		if e.set.Load() {
			close(ch)
		}
		e.ch.Store(ch)
		e.newGenLocked()
	}
	return ch
}

// newGenLocked starts a generation of holders, with a count of zero. e.mu
// must be held.
func (e *Event) newGenLocked() {
	e.holders.Store(e.holders.Load()&^holderCount + holderGen)
}

// Set raises the flag and wakes every goroutine waiting for it. Setting an
// Event that is already set does nothing, and allocates nothing.
func (e *Event) Set() {
	if e.set.Load() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.set.Load() {
		return
	}
	e.set.Store(true)
	if ch := e.loadCh(); ch != nil {
		if e.shared || e.holders.Load()&holderCount > 0 {
			close(ch)
		} else {
			// Nobody holds it: drop it rather than close it, since it may
			// belong to a synctest bubble that has ended (see chLocked).
			e.ch.Store(chan struct{}(nil))
		}
	}
	// Those woken are no longer counted: they need not take themselves
	// off, and a waiter that was about to join this generation fails its
	// compare-and-swap and finds the flag raised.
	e.newGenLocked()
}

// Clear lowers the flag. Goroutines that call Wait afterwards block until the
// next Set; those already woken by the last Set stay woken.
func (e *Event) Clear() {
	if !e.set.Load() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.set.Load() {
		// The count is zero since Set, and stays so while the flag is
		// raised (see join): the generation need not move.
		e.set.Store(false)
		e.ch.Store(chan struct{}(nil)) // the next run gets a fresh channel
		e.shared = false
	}
}

// IsSet reports whether the flag is raised at the moment of the call.
func (e *Event) IsSet() bool { return e.set.Load() }

// Wait blocks until the flag is raised or ctx is done. It returns at once if
// the flag is already raised.
//
// On failure it returns ctx.Err(); a ctx that is already done fails even when
// the flag is raised. Waiting consumes nothing: a Set that coincides with the
// end of ctx still wakes every other waiter.
func (e *Event) Wait(ctx context.Context) error {
	if err := waitq.CtxErr(ctx, "ctxsync"); err != nil {
		return err
	}
	if e.set.Load() {
		return nil
	}
	// Read before joining: ctx is the caller's code, and nothing must be
	// counted for the caller while it runs.
	done := ctx.Done()
	ch, gen := e.join()
	if ch == nil {
		return nil // raised meanwhile
	}
	if done == nil {
		<-ch
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-done:
		e.mu.Lock()
		if e.holders.Load()/holderGen == gen {
			// The channel is still open: take ourselves off. The
			// generation cannot move while mu is held, but others may
			// join meanwhile.
			e.holders.Add(^uint64(0))
		}
		e.mu.Unlock()
		return waitq.DoneErr(ctx)
	}
}

// join counts the caller among the holders of the current channel, and
// returns the channel and the generation counted in; or a nil channel if the
// flag is raised.
//
// While anyone holds the channel it cannot be replaced (see chLocked), and Set
// closes it, so a caller that joins while others hold it needs no lock: it
// loads the holders' word, and if the count is above zero, the channel; if
// its compare-and-swap then finds the word unchanged, the generation has not
// moved, and the channel it loaded is the one the holders share. (The word
// could only come back to the same value after 2^32 generations.) A caller
// that finds the count zero takes the lock, and is the first holder.
func (e *Event) join() (chan struct{}, uint64) {
	for h := e.holders.Load(); h&holderCount > 0; h = e.holders.Load() {
		ch := e.loadCh()
		if e.holders.CompareAndSwap(h, h+1) {
			return ch, h / holderGen
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.set.Load() {
		// Raised since Wait looked. The count stays zero while it is, so
		// that Clear need not move the generation.
		return nil, 0
	}
	ch := e.chLocked()
	return ch, e.holders.Add(1) / holderGen
}

// Done returns a channel that is closed when the flag is raised, for use in a
// select with other channels. While the flag is raised it returns a closed
// channel. After Clear it returns a new channel, for the next Set; channels
// handed out before the Clear stay closed.
//
// Like any channel, the one Done returns belongs to the testing/synctest
// bubble, if any, of the goroutine that first asked for it since the last
// Clear, and the Event keeps it until the next Clear. Until then, a Set or a
// Wait outside that bubble touches the bubble's channel, which the Go runtime
// refuses with a fatal error, even after the bubble has ended. The other way
// round, a channel asked for outside every bubble belongs to none, and a Wait
// inside a bubble, until the next Clear, waits on it: the waiting goroutine is
// not durably blocked, and the bubble's clock stops until the flag is raised
// (a Wait with a deadline never reaches it). Without Done,
// an Event drops a channel that no waiter holds, so Wait and Set have no such
// restriction beyond the package's rule for hand-overs across a bubble's edge
// (see "Testing with synctest" in the package documentation).
func (e *Event) Done() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := e.chLocked()
	e.shared = true
	return ch
}
