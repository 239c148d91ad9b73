package ratelimit

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
)

// A Tally counts the decisions of the limiters it wraps, for metrics: how
// many calls were allowed and refused, how many waits ended how. Wrap a
// limiter with it and use the wrapper in its stead; several limiters (the
// per-key limiters of a Keyed, made by its constructor) may share one Tally,
// which then counts for them all.
//
// The limiters themselves count nothing: a limiter that is not wrapped
// costs nothing more. The wrapper adds an atomic add to each call, on a
// counter its goroutines share.
//
// The zero Tally is ready to use. A Tally must not be copied after first
// use. It is safe for concurrent use by multiple goroutines.
type Tally struct {
	// OnWait, if not nil, is told of every WaitN through the Tally's
	// wrappers when it returns: how long it took, and its error (nil when
	// the events were taken). It runs in WaitN's goroutine, and must be
	// safe for concurrent use. With it set, each WaitN reads the clock
	// twice. Set it before the Tally's first use.
	OnWait func(d time.Duration, err error)

	allowed, refused, waited, waitFailed atomic.Int64
}

// TallyCounts are the counts of a Tally.
type TallyCounts struct {
	Allowed    int64 // AllowN and Take calls that took their events
	Refused    int64 // AllowN and Take calls refused
	Waited     int64 // WaitN calls that took their events
	WaitFailed int64 // WaitN calls that returned an error
}

// Counts returns the counts at the moment of the call.
func (t *Tally) Counts() TallyCounts {
	if t == nil {
		panic(errNilTally)
	}
	return TallyCounts{
		Allowed:    t.allowed.Load(),
		Refused:    t.refused.Load(),
		Waited:     t.waited.Load(),
		WaitFailed: t.waitFailed.Load(),
	}
}

// Wrap returns l, counted by t. The wrapper's Take is l's if l is a Taker;
// else its Decision has only Allowed, and Remaining -1.
//
// Wrap panics if l or t is nil.
func (t *Tally) Wrap(l Limiter) Taker {
	if t == nil {
		panic(errNilTally)
	}
	if isNil(l) {
		panic("ratelimit: Tally.Wrap of a nil Limiter")
	}
	tk, _ := l.(Taker)
	return &tallied{t: t, l: l, tk: tk}
}

// errNilTally is the panic of a nil *Tally's methods.
const errNilTally = "ratelimit: nil *Tally; the zero Tally is ready to use"

// tallied is a Limiter wrapped by Tally.Wrap.
type tallied struct {
	t  *Tally
	l  Limiter
	tk Taker // l, if it is a Taker
}

func (w *tallied) count(ok bool) bool {
	if ok {
		w.t.allowed.Add(1)
	} else {
		w.t.refused.Add(1)
	}
	return ok
}

func (w *tallied) AllowN(n int) bool { return w.count(w.l.AllowN(n)) }

func (w *tallied) Take(n int) Decision {
	if w.tk == nil {
		return Decision{Allowed: w.AllowN(n), Remaining: -1}
	}
	d := w.tk.Take(n)
	w.count(d.Allowed)
	return d
}

func (w *tallied) WaitN(ctx context.Context, n int) error {
	h := w.t.OnWait
	var start int64
	if h != nil {
		start = clock.Now()
	}
	err := w.l.WaitN(ctx, n)
	if err == nil {
		w.t.waited.Add(1)
	} else {
		w.t.waitFailed.Add(1)
	}
	if h != nil {
		h(time.Duration(clock.Now()-start), err)
	}
	return err
}
