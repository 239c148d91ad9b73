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
// Each call through a wrapper is one decision, counted once. A Transport's
// request is one too: a wait, counted once in Waited or WaitFailed (and told
// to OnWait), whether it took its events at once or waited, and whatever
// calls of the limiter it took to learn, for a *DeadlineError, how long the
// wait would have been. That holds for the limiters of this package and for a
// type of the user's that embeds one (a *Keyed, say); a type that holds a
// counted limiter in a field of an interface type hides it, and the Take
// that Transport calls on it to learn the delay counts as a decision.
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
	Allowed    int64 // AllowN, Take and TakeContext calls that took their events
	Refused    int64 // AllowN, Take and TakeContext calls refused
	Waited     int64 // WaitN calls, and Transport's requests, that took their events
	WaitFailed int64 // WaitN calls, and Transport's requests, that failed on the limiter
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
// else its Decision has only Allowed, and Remaining Unknown. If l has a
// method TakeContext(ctx context.Context, n int) (Decision, error), as
// redislimit's Handle has, so has the wrapper, counted as Take is (a call
// that ends without a decision, its ctx ended, counts as neither): Middleware
// and Transport then ask it with the request's ctx.
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
	w := &tallied{t: t, l: l, tk: tk}
	if ct, ok := l.(contextTakerOne); ok {
		// Keep l's TakeContext, counted: Middleware (under Global) and
		// Transport ask with the request's ctx what has one.
		return &talliedContext{tallied: w, ct: ct}
	}
	return w
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

// wrapped returns the limiter w counts, for Transport.Check and Middleware
// to check.
func (w *tallied) wrapped() any { return w.l }

func (w *tallied) Take(n int) Decision {
	if w.tk == nil {
		return Decision{Allowed: w.AllowN(n), Remaining: Unknown}
	}
	d := w.tk.Take(n)
	w.count(d.Allowed)
	return d
}

func (w *tallied) quietTake(n int) Decision { return quietTake(w.l, n) }

// quietTakeContext is quietTake asked with ctx (see quietTakeContext).
func (w *tallied) quietTakeContext(ctx context.Context, n int) (Decision, error) {
	return quietTakeContext(ctx, w.l, n)
}

// talliedContext is a Limiter with a TakeContext (redislimit's Handle)
// wrapped by Tally.Wrap: the wrapper has it too.
type talliedContext struct {
	*tallied
	ct contextTakerOne
}

// TakeContext is l's, counted as Take is. A call that ends without a
// decision (an error with the zero Decision: its ctx ended) is neither
// allowed nor refused, and counts as neither.
func (w *talliedContext) TakeContext(ctx context.Context, n int) (Decision, error) {
	d, err := w.ct.TakeContext(ctx, n)
	if err == nil || d != (Decision{}) {
		w.count(d.Allowed)
	}
	return d, err
}

func (w *tallied) WaitN(ctx context.Context, n int) error {
	h, start := w.t.startWait()
	err := w.l.WaitN(ctx, n)
	w.t.endWait(h, start, err)
	return err
}

// waitRequest is the wait of a Transport's request, counted as one wait
// however many calls of l it takes (see waitRequest).
func (w *tallied) waitRequest(ctx context.Context, n int, key string) error {
	h, start := w.t.startWait()
	err := waitRequest(ctx, w.l, n, key)
	w.t.endWait(h, start, err)
	return err
}

// startWait returns OnWait and, if it is set, the time a wait starts: the
// clock is read only for OnWait.
func (t *Tally) startWait() (func(time.Duration, error), int64) {
	h := t.OnWait
	if h == nil {
		return nil, 0
	}
	return h, clock.Now()
}

// endWait counts a wait that began at start, and tells h of it.
func (t *Tally) endWait(h func(time.Duration, error), start int64, err error) {
	if err == nil {
		t.waited.Add(1)
	} else {
		t.waitFailed.Add(1)
	}
	if h != nil {
		h(time.Duration(clock.Now()-start), err)
	}
}
