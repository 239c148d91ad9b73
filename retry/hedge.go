package retry

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// Hedge says how to hedge a call: when the first attempt has not answered
// after Delay, a second copy is sent, and the first of them to succeed is
// the answer ("The Tail at Scale", Dean and Barroso, 2013). A call that is
// slow because it drew a slow replica or a pause is then answered by the
// copy, at the cost of a few extra calls.
//
// A Hedge is a plain value holding no state of its own: share it and copy
// it. Every Hedge needs a Budget (NewBudget): it caps the hedges of every
// call that shares it to a share of the calls, so that hedging never
// multiplies the load on a service that is slow for everyone. A hedge the
// Budget refuses is not sent, and the attempts in flight go on: the call is
// then as slow as it would have been, never slower and never failed by it.
//
// Fields out of range are programming errors: DoHedged panics (and
// Transport with it), with a message that begins with "retry:" (Validate
// returns the same as an error, for a Hedge read from outside), on a
// negative Delay, a MaxHedges below -1, or a Budget that is nil or not made
// by NewBudget. So the zero Hedge panics: it has no Budget.
type Hedge struct {
	// Delay is how long an attempt runs before the next copy is sent.
	// 0 follows the latency of the service: the delay is then about the
	// 95th percentile of recent first attempts' latency (the one that
	// about 6% of them outlast), kept in the Budget, so that only the
	// slowest few calls are hedged whatever the service's speed is this
	// minute. A fixed Delay is wrong as soon as the latency moves: too
	// short, and every call is hedged; too long, and none is helped.
	//
	// The estimate needs no clock: each call tells it only whether its
	// first attempt outlasted the delay, which the hedge timer tells
	// anyway, or succeeded within it. A first attempt that fails within
	// the delay is not counted: fast failures (a refused connection) say
	// nothing of how long answers take. The first call to succeed seeds it, timed with two clock
	// reads, and is not hedged; the estimate is never below 100µs, as a
	// copy of a call faster than that costs more than it could save.
	// After the service's latency changes, it follows in ratio: from
	// 200ms down to 10ms in about 1500 calls, up from 1ms to 100ms in
	// about 150 (while hedging those, within the Budget). A Budget
	// shared by services of different speeds gets one estimate for them
	// all: give each service its own.
	Delay time.Duration

	// MaxHedges is the most copies sent besides the first attempt, each
	// Delay after the one before. 0 means 1; NoLimit (-1) means no limit
	// but the Budget's.
	MaxHedges int

	// Budget caps the hedges to a share of the calls (NewBudget(0.1, 1):
	// at most 10% more calls, plus 10 in any 10 seconds). Share it among
	// the calls to one service. Required.
	//
	// A Transport with a Hedge may share it with its Policy, so that
	// hedges and retries together stay within one share: a request counts
	// once. DoHedged called from Do (or Execute) must not: Do counts the
	// call, and each DoHedged counts it again, at every attempt, so that
	// one Budget given to both lets through about twice its share of
	// retries while the service fails. Give the Policy a Budget of its own.
	Budget *Budget
}

// Validate reports what is wrong with h, if anything (see Hedge). DoHedged
// and Transport panic with the same complaint; a program that reads a
// Hedge's fields from outside can call Validate first and report the error.
func (h Hedge) Validate() error {
	switch {
	case h.Delay < 0:
		return errors.New("retry: negative Hedge.Delay")
	case h.MaxHedges < NoLimit:
		return errors.New("retry: Hedge.MaxHedges " + strconv.Itoa(h.MaxHedges) + " below -1 (NoLimit)")
	case h.Budget == nil:
		return errors.New("retry: Hedge.Budget is nil: hedges need a Budget (NewBudget) to cap them")
	case !h.Budget.made:
		return errors.New("retry: use NewBudget to make a Budget")
	}
	return nil
}

// DoHedged calls fn, and again each h.Delay that no attempt has succeeded,
// up to h.MaxHedges more times, while h.Budget allows; it returns the value
// of the first attempt to succeed and cancels the ctxs of the others, whose
// results are dropped. A failure ends the call when it is marked Permanent
// (or is a closed Queue's or Pool's ErrClosed: see the package doc), or when
// no other attempt is in flight: DoHedged then returns the error of the
// attempt that failed last, with its value, as fn returned them.
// Hedging is for slowness; to try again after a failure, call DoHedged from
// Do.
//
// If ctx is done before the first attempt, DoHedged calls nothing and
// returns ctx.Err(). If ctx has ended when the call fails, or ends while it
// waits for copies after the first attempt failed, DoHedged returns
// ctx.Err() unwrapped (a Permanent failure excepted), unless an attempt has
// succeeded. Whatever the outcome, no attempt is left with a live ctx: the
// copies still running are cancelled, and drop their results.
//
// The hedges count as retries in h.Budget, and each call as a first
// attempt: called from Do, each attempt of Do's counts, so Do's Policy
// needs a Budget other than h's (see Hedge.Budget).
//
// The first attempt runs in the caller's goroutine, so that a call answered
// before Delay (most of them) costs no goroutine; copies run in goroutines
// of their own. So a copy shortens the call only if fn heeds ctx: DoHedged
// returns when the first attempt has returned, which a cancelled ctx should
// make prompt. Copies that lose are not waited for; their ctx is cancelled.
//
// The return of the attempt whose result DoHedged returns is synchronized
// before DoHedged returns.
//
// A panic in the first attempt, or in a copy before DoHedged has returned,
// reaches the caller after the other attempts' ctxs are cancelled; a copy
// that panics after the call has returned has lost, and its panic is
// dropped with its result. A first attempt that calls runtime.Goexit ends
// the caller's goroutine, as a panic would end the call; a copy that calls it
// (t.FailNow in a test's fn) ends only its own, and has failed with
// ctxsync.ErrGoexit, which is not Permanent: the other attempts go on.
// DoHedged panics if ctx or fn is nil, or if h is out of range (see Hedge).
func DoHedged[T any](ctx context.Context, h Hedge, fn func(ctx context.Context) (T, error)) (T, error) {
	if ctx == nil {
		panic("retry: nil Context")
	}
	if fn == nil {
		panic("retry: nil function")
	}
	if err := h.Validate(); err != nil {
		panic(err.Error())
	}
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	h.Budget.deposit()
	v, release, err := hedged(ctx, &h, fn, nil)
	release()
	return v, err
}

// hedgeResult is what an attempt gave: its value and error, or the value it
// panicked with.
type hedgeResult[T any] struct {
	v        T
	err      error
	panicked bool
	pv       any
	id       int // 0 for the first attempt, i for the i'th copy
}

// hedgeCall is the state of one hedged call, shared by the caller, the
// timer's callback and the copies.
type hedgeCall[T any] struct {
	ctx  context.Context
	done <-chan struct{} // ctx.Done(), read before mu is first locked: ctx is the caller's code

	// base is made from ctx in the caller's goroutine, and every attempt's
	// ctx from base: making, or cancelling, a ctx of the context package
	// from the caller's ctx calls its Done (and Value), the caller's code,
	// which must not run in the timer's goroutine or a copy's, where
	// nothing would recover its panic. cancelBase, called in the caller's
	// goroutine, releases the winner (see hedged).
	base       context.Context
	cancelBase context.CancelFunc
	h          *Hedge
	fn         func(context.Context) (T, error)
	drop       func(T) // frees a value no one will see; may be nil
	delay      time.Duration
	// cancelsBuf holds the cancels of a call with one copy, the usual
	// most, without an allocation of its own.
	cancelsBuf [2]context.CancelFunc

	mu       sync.Mutex
	over     bool                 // the call is decided; guarded by mu
	fired    bool                 // the timer has fired; guarded by mu
	timer    *time.Timer          // nil with no delay; guarded by mu
	inflight int                  // copies running; guarded by mu
	cancels  []context.CancelFunc // of every attempt's ctx, by id; guarded by mu
	wake     chan struct{}        // a copy has ended, capacity 1; made with the first copy; guarded by mu
	final    *hedgeResult[T]      // a copy's success or Permanent failure, which decides; guarded by mu
	failed   *hedgeResult[T]      // the copy that failed last, not yet seen by settle; guarded by mu
}

// hedged runs the hedged call: DoHedged without the checks and the deposit,
// for Transport too. It returns the outcome and the function that releases
// the ctx of the attempt that gave it, which Transport keeps alive until the
// response's body is closed. drop, if not nil, is given every value that is
// not returned (successes that lost, failures that were not the last), so
// that Transport frees their connections.
func hedged[T any](ctx context.Context, h *Hedge, fn func(context.Context) (T, error), drop func(T)) (T, context.CancelFunc, error) {
	c := &hedgeCall[T]{ctx: ctx, done: ctx.Done(), h: h, fn: fn, drop: drop, delay: h.Delay}
	c.cancels = c.cancelsBuf[:0]
	est := &h.Budget.latency
	var start int64
	seeding := false
	if c.delay == 0 {
		if c.delay = est.delay(); c.delay == 0 {
			// No estimate yet: this attempt makes the first, from the
			// clock, and is not hedged. Other calls read no clock.
			start, seeding = nowNanos(), true
		}
	}
	c.base, c.cancelBase = context.WithCancel(ctx)
	actx, cancel := context.WithCancel(c.base)
	c.cancels = append(c.cancels, cancel)
	if c.delay > 0 {
		// Under mu: the callback may run before AfterFunc returns.
		c.mu.Lock()
		c.timer = time.AfterFunc(c.delay, c.fire)
		c.mu.Unlock()
	}
	first := c.runFirst(actx)

	c.mu.Lock()
	fired := c.fired
	c.mu.Unlock()
	if h.Delay == 0 {
		switch {
		case seeding:
			if first.err == nil {
				// Only a success seeds: a refused connection answers
				// in microseconds, and would set every call hedging.
				est.seed(time.Duration(nowNanos() - start))
			}
		case fired:
			// The first attempt outlasted the delay: the timer fired
			// before it returned. No clock is read.
			est.observe(true)
		case first.err == nil && ctx.Err() == nil:
			// It answered within the delay. Only a success counts, as
			// for the seed: failures that come fast (a refused
			// connection) say nothing of how long answers take, and a
			// run of them would drag the estimate to its floor and hedge
			// every call once answers came again. A call cut short by
			// the caller's ctx before the delay tells nothing either.
			est.observe(false)
		}
	}
	return c.settle(first)
}

// runFirst runs the first attempt in the caller's goroutine. A panic in it,
// or a runtime.Goexit, ends the call on its way: the copies' ctxs are
// cancelled, and so is base, which settle will not release.
func (c *hedgeCall[T]) runFirst(actx context.Context) (r hedgeResult[T]) {
	r.panicked = true
	defer func() {
		if r.panicked {
			c.mu.Lock()
			cancels := c.endLocked()
			c.mu.Unlock()
			for _, f := range cancels {
				f()
			}
			c.cancelBase()
		}
	}()
	r.v, r.err = c.fn(actx)
	r.panicked = false
	return r
}

// dueLocked reports whether another copy may be sent. Called with mu held.
func (c *hedgeCall[T]) dueLocked() bool {
	if c.over || c.final != nil {
		return false
	}
	copies := len(c.cancels) - 1
	return c.h.MaxHedges < 0 || copies < max(c.h.MaxHedges, 1)
}

// fire is the timer's callback: it sends a copy if one is due and the
// Budget allows it, and sets the timer for the next.
func (c *hedgeCall[T]) fire() {
	c.mu.Lock()
	c.fired = true
	due := c.dueLocked()
	c.mu.Unlock()
	// The Budget outside mu: it takes its own lock and reads the clock. A
	// refusal sends nothing and sets no timer: the attempts in flight go
	// on, and the call is as slow as it would have been unhedged, never
	// failed by the refusal.
	if !due || !c.h.Budget.withdraw() {
		return
	}
	// Made from base, which runs none of the caller's code (see base), and
	// before mu is locked.
	actx, cancel := context.WithCancel(c.base)
	c.mu.Lock()
	if !c.dueLocked() {
		// Decided meanwhile: the withdrawal is spent on nothing, which
		// errs on the side of less load.
		c.mu.Unlock()
		cancel()
		return
	}
	id := len(c.cancels)
	if c.wake == nil {
		c.wake = make(chan struct{}, 1)
	}
	c.cancels = append(c.cancels, cancel)
	c.inflight++
	if c.dueLocked() {
		c.timer.Reset(c.delay)
	}
	c.mu.Unlock()
	go c.runCopy(actx, id)
}

// runCopy runs a copy, in a goroutine of its own, and reports how it ended.
func (c *hedgeCall[T]) runCopy(actx context.Context, id int) {
	r := &hedgeResult[T]{id: id, panicked: true}
	defer func() {
		if r.panicked {
			if r.pv = recover(); r.pv == nil {
				// fn called runtime.Goexit, which ended this
				// goroutine only (a panic(nil) recovers as a
				// *runtime.PanicNilError): a failure of this
				// copy, which the caller gets as an error.
				r.err, r.panicked = ctxsync.ErrGoexit, false
			}
		}
		var cancels []context.CancelFunc
		var drop *hedgeResult[T]
		c.mu.Lock()
		c.inflight--
		switch {
		case c.over || c.final != nil:
			// Decided without this copy: it lost.
			drop = r
			cancels = append(cancels, c.cancels[id])
		case r.panicked || r.err == nil || isPermanent(r.err):
			// It decides: the first success wins, and a panic or a
			// Permanent failure ends the call. Every other attempt is
			// cancelled now, the first included, so that the caller's
			// goroutine, waiting in fn, returns at once.
			c.final = r
			for i, f := range c.cancels {
				if i != id {
					cancels = append(cancels, f)
				}
			}
		default:
			drop, c.failed = c.failed, r // the older failure is freed
		}
		wake := c.wake
		c.mu.Unlock()
		for _, f := range cancels {
			f()
		}
		c.free(drop)
		select {
		case wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}()
	if err := actx.Err(); err != nil {
		// Decided, or the caller's ctx ended, between fire and now:
		// calling fn would only make it fail.
		r.err, r.panicked = err, false
		return
	}
	r.v, r.err = c.fn(actx)
	r.panicked = false
}

// settle decides the call once the first attempt has returned, waiting for
// the copies in flight if it failed.
func (c *hedgeCall[T]) settle(first hedgeResult[T]) (T, context.CancelFunc, error) {
	if first.panicked {
		c.cancelBase()
		panic(first.pv) // runFirst has ended the call
	}
	var last *hedgeResult[T] // the failure to return if none is better
	// firstFreed reports that the first attempt's result was freed as an
	// older failure, when a copy's failure came after it: its value must
	// not be dropped again (a response's body closed twice).
	firstFreed := false
	for {
		c.mu.Lock()
		var older *hedgeResult[T]
		if last == nil && first.err != nil && c.final == nil {
			// The first attempt failed after every copy that failed so
			// far: it is the last failure.
			older, c.failed, last = c.failed, nil, &first
		} else if c.failed != nil {
			older, last, c.failed = last, c.failed, nil
		}
		var out *hedgeResult[T]
		switch {
		case c.final != nil:
			out = c.final
		case first.err == nil || isPermanent(first.err):
			out = &first
		case c.inflight == 0 || waitq.Ended(c.done) || isPermanent(last.err):
			// A failure decides the call when no copy is in flight: a
			// copy due later would be sent only to learn the same. A
			// copy's Permanent failure came through final.
			out = last
		}
		firstFreed = firstFreed || older == &first
		if out == nil {
			wake := c.wake // made: a copy is in flight
			c.mu.Unlock()
			c.free(older)
			select {
			case <-wake:
			case <-c.done:
			}
			continue
		}
		cancels := c.endLocked()
		c.mu.Unlock()
		// Every attempt's ctx is cancelled but the one that gave out,
		// which the caller releases when it is done with the value.
		for i, f := range cancels {
			if i != out.id {
				f()
			}
		}
		c.free(older)
		// Values no one will see: the first attempt's and the last
		// failure's, unless returned.
		if out != &first && !firstFreed {
			c.freeValue(&first)
		}
		if last != nil && last != out && last != &first {
			c.freeValue(last)
		}
		if out.panicked {
			c.cancelBase()
			panic(out.pv)
		}
		if out.err != nil && !isPermanent(out.err) {
			if waitq.Ended(c.done) {
				// The caller's ctx ended the wait: its error, as every
				// blocking call of the library returns it, read once
				// every attempt is cancelled (it is the caller's code,
				// and may panic).
				c.freeValue(out)
				c.cancelBase()
				var zero T
				return zero, func() {}, waitq.DoneErr(c.ctx)
			}
		}
		// The winner's release cancels base, and with it the winner's
		// ctx: in the caller's goroutine, as the caller calls it.
		return out.v, c.cancelBase, out.err
	}
}

// endLocked marks the call over, stops its timer and returns the cancel
// functions of every attempt's ctx, indexed by id. Called with mu held.
func (c *hedgeCall[T]) endLocked() []context.CancelFunc {
	c.over = true
	if c.timer != nil {
		c.timer.Stop()
	}
	return c.cancels
}

// free releases a result that will not be returned: its ctx, and its value.
func (c *hedgeCall[T]) free(r *hedgeResult[T]) {
	if r == nil {
		return
	}
	c.mu.Lock()
	cancel := c.cancels[r.id]
	c.mu.Unlock()
	cancel()
	c.freeValue(r)
}

// freeValue gives drop the value of a result that will not be returned.
func (c *hedgeCall[T]) freeValue(r *hedgeResult[T]) {
	if c.drop != nil && !r.panicked {
		c.drop(r.v)
	}
}
