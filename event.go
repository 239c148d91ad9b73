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

	// holders counts goroutines in Wait that hold the current channel. It
	// rises from zero only with mu held; above zero it rises and falls
	// without the lock (see join). A stale read under mu that finds it zero
	// is exact: nobody can join without mu until it is above zero again.
	holders atomic.Int32

	mu sync.Mutex
	// ch holds a chan struct{} that is closed while the flag is raised, or a
	// nil one when none is needed yet. Written with mu held.
	ch atomic.Value
	// shared reports that Done handed ch out, so it must stay until Clear.
	shared bool // guarded by mu
}

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
	if ch == nil || (!e.shared && e.holders.Load() == 0) {
		ch = make(chan struct{})
		if e.set.Load() {
			close(ch)
		}
		e.ch.Store(ch)
	}
	return ch
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
		if e.shared || e.holders.Load() > 0 {
			close(ch)
		} else {
			// Nobody holds it: drop it rather than close it, since it may
			// belong to a synctest bubble that has ended (see chLocked).
			e.ch.Store(chan struct{}(nil))
		}
	}
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
	ch := e.join()
	defer e.holders.Add(-1)

	done := ctx.Done()
	if done == nil {
		<-ch
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-done:
		return ctx.Err()
	}
}

// join counts the caller among the holders and returns the current channel.
//
// While anyone holds the channel it cannot be replaced (see chLocked), and Set
// closes it, so a caller that joins while another holds it needs no lock: it
// counts itself only if the count is already above zero. The count rises
// from zero only with mu held, after chLocked, so the channel loaded then is
// the one that the holders share. If a Set and a Clear have since dropped it,
// the caller takes the lock like the first holder.
func (e *Event) join() chan struct{} {
	joined := false
	for h := e.holders.Load(); h > 0; h = e.holders.Load() {
		if e.holders.CompareAndSwap(h, h+1) {
			if ch := e.loadCh(); ch != nil {
				return ch
			}
			joined = true
			break
		}
	}
	e.mu.Lock()
	ch := e.chLocked()
	if !joined {
		e.holders.Add(1)
	}
	e.mu.Unlock()
	return ch
}

// Done returns a channel that is closed when the flag is raised, for use in a
// select with other channels. While the flag is raised it returns a closed
// channel. After Clear it returns a new channel, for the next Set; channels
// handed out before the Clear stay closed.
//
// Like any channel, the one Done returns belongs to the testing/synctest
// bubble, if any, of the goroutine that first asked for it since the last
// Clear. Wait has no such restriction.
func (e *Event) Done() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := e.chLocked()
	e.shared = true
	return ch
}
