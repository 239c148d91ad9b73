package retry

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/ctxsync/ctxsync/internal/waitq"
)

// NoLimit, as Policy.MaxAttempts, sets no limit on the attempts. Like every
// -1 of the library's configurations, it means "none".
const NoLimit = -1

// Policy says how to retry. It is a plain value holding no state: share it
// and copy it freely, even while it is in use. The zero value of every field
// means its documented default, so the zero Policy makes at most 3 attempts,
// waits between them with exponential backoff from 100ms doubling up to 10s
// with full jitter, retries every error but Permanent ones, a closed Queue's
// or Pool's ErrClosed and the caller's own ctx errors, honours a
// RetryAfter() of up to 10s, and never starts a wait that would end after
// ctx's deadline.
//
// Fields out of range are programming errors: Execute panics, with a
// message that begins with "retry:" (Validate returns the same as an error,
// for a Policy read from outside), on a MaxAttempts below -1, a negative
// duration, a Multiplier that is NaN or below 1 (but 0), or an unknown
// Jitter.
type Policy struct {
	// MaxAttempts is the number of attempts in all, the first included.
	// 0 means 3; NoLimit (-1) means no limit (then bound the retries with
	// a ctx deadline, MaxElapsed or a Budget); 1 means no retry.
	MaxAttempts int

	// MaxElapsed stops the retries once this much time has passed since
	// the first attempt began: a wait that would end at or after it is not
	// started. 0 means no limit. With it set, each call reads the clock at
	// its start.
	MaxElapsed time.Duration

	// InitialDelay is the wait after the first failure, before jitter.
	// 0 means 100ms.
	InitialDelay time.Duration

	// MaxDelay caps each wait that the backoff computes. 0 means 10s. A
	// RetryAfter() floor may exceed it, up to MaxRetryAfter.
	MaxDelay time.Duration

	// MaxRetryAfter bounds the wait an error may ask for with a method
	// RetryAfter() time.Duration: one that asks for longer ends the
	// retries at once (MaxRetryAfterExceeded), rather than hold the caller
	// that long. A breaker open for 30s, or a server's Retry-After of an
	// hour, then fails the call now, with that error, instead of after
	// the wait. 0 means 10s, or MaxDelay if that is longer: a wait the
	// backoff itself might make is always honoured. To honour any wait,
	// set it to time.Duration(math.MaxInt64), and bound the call with a
	// ctx deadline or MaxElapsed.
	MaxRetryAfter time.Duration

	// Multiplier is the growth of the wait from one attempt to the next:
	// the n'th wait is InitialDelay × Multiplier^(n-1), capped at MaxDelay,
	// then jittered. 0 means 2; 1 gives a constant delay; +Inf jumps to
	// MaxDelay after the first wait. DecorrelatedJitter does not use it.
	Multiplier float64

	// Jitter spreads the waits at random so that clients that failed
	// together do not retry together. The zero value is FullJitter.
	Jitter Jitter

	// NoDelay retries at once, without waiting and without a timer:
	// InitialDelay, MaxDelay, Multiplier and Jitter are then unused. A
	// RetryAfter() floor still applies. For tests, and for failures that
	// are not due to load (a conflict resolved by trying again).
	NoDelay bool

	// AttemptTimeout, if not 0, runs each attempt under a ctx that ends
	// after this long. An attempt cut short by it is retried (the error it
	// returns is not the caller's ctx error), and the ctx it ran under is
	// released when it returns. With it set, each attempt allocates.
	AttemptTimeout time.Duration

	// Retryable, if not nil, decides whether an attempt's error is worth
	// another attempt. It is consulted only for errors that are neither
	// Permanent, nor a closed Queue's or Pool's ErrClosed, nor the caller's
	// own ctx errors: it cannot make those retryable. nil retries every such error. It runs in the caller's
	// goroutine, outside any lock; a panic in it reaches the caller.
	Retryable func(error) bool

	// Budget, if not nil, caps the retries of every Policy that shares it
	// to a share of the calls they make (see NewBudget). When it refuses a
	// retry, the failed attempt is the last.
	Budget *Budget

	// DelayFunc, if not nil, gives the waits, for schedules that the
	// backoff cannot express (a fixed list, a wait read from the error):
	// it is called before each wait with the number of the attempt that
	// just failed (1 for the first) and its error, and returns the wait.
	// InitialDelay, MaxDelay, Multiplier, Jitter and NoDelay are then
	// unused. A RetryAfter() floor still applies, as do MaxRetryAfter, the
	// deadline and MaxElapsed; a negative wait is taken as 0. It runs in
	// the caller's goroutine, outside any lock; a panic in it reaches the
	// caller, and no more attempt is made.
	DelayFunc func(attempt int, err error) time.Duration

	// OnRetry, if not nil, is called before each wait: attempt is the number
	// of the attempt that just failed (1 for the first), err its error and
	// delay the wait to come. It runs in the caller's goroutine, outside any
	// lock; a panic in it reaches the caller, and no more attempt is made.
	OnRetry func(attempt int, err error, delay time.Duration)
}

// Jitter is how a Policy spreads its waits, after Amazon's "Exponential
// Backoff And Jitter" (AWS Architecture Blog, 2015). With d the exponential
// delay of the attempt (InitialDelay × Multiplier^(n-1), capped at MaxDelay):
type Jitter int

const (
	// FullJitter waits a random time between 0 and d: the least total work
	// for a server that many clients retry against.
	FullJitter Jitter = iota
	// EqualJitter waits d/2 plus a random time between 0 and d/2: never
	// much less than the backoff, still spread.
	EqualJitter
	// DecorrelatedJitter waits a random time between InitialDelay and three
	// times the previous wait, capped at MaxDelay (Multiplier is not used).
	DecorrelatedJitter
	// NoJitter waits exactly d: deterministic, for tests and examples.
	NoJitter
)

// String returns the constant's name: "FullJitter".
func (j Jitter) String() string {
	switch j {
	case FullJitter:
		return "FullJitter"
	case EqualJitter:
		return "EqualJitter"
	case DecorrelatedJitter:
		return "DecorrelatedJitter"
	case NoJitter:
		return "NoJitter"
	}
	return "Jitter(" + strconv.Itoa(int(j)) + ")"
}

// Defaults of the zero Policy's fields.
const (
	defaultAttempts = 3
	defaultInitial  = 100 * time.Millisecond
	defaultMaxDelay = 10 * time.Second
	// defaultMaxRetryAfter is short enough that a caller meeting a breaker
	// open for its default 30s, or a server that asks for minutes, is told
	// at once, and long enough for the usual Retry-After of a throttled
	// API (a second to a few).
	defaultMaxRetryAfter = 10 * time.Second
	defaultMultiplier    = 2
)

// check panics if a field of p is out of range. It runs on every call, since
// a Policy is a plain value that nothing constructs: a few comparisons.
func (p *Policy) check() {
	if err := p.Validate(); err != nil {
		panic(err.Error())
	}
}

// Validate reports what is wrong with p, if anything: a field out of range
// (see Policy), or a Budget not made by NewBudget. Execute, Do and Transport
// panic with the same complaint; a program that reads a Policy's fields from
// outside (a file, flags) can call Validate first and report the error.
func (p Policy) Validate() error {
	switch {
	case p.MaxAttempts < NoLimit:
		return errors.New("retry: Policy.MaxAttempts " + strconv.Itoa(p.MaxAttempts) + " below -1 (NoLimit)")
	case p.MaxElapsed < 0:
		return errors.New("retry: negative Policy.MaxElapsed")
	case p.InitialDelay < 0:
		return errors.New("retry: negative Policy.InitialDelay")
	case p.MaxDelay < 0:
		return errors.New("retry: negative Policy.MaxDelay")
	case p.MaxRetryAfter < 0:
		return errors.New("retry: negative Policy.MaxRetryAfter")
	case p.AttemptTimeout < 0:
		return errors.New("retry: negative Policy.AttemptTimeout")
	case math.IsNaN(p.Multiplier):
		return errors.New("retry: Policy.Multiplier is NaN")
	case p.Multiplier != 0 && p.Multiplier < 1:
		return errors.New("retry: Policy.Multiplier below 1")
	case p.Jitter < FullJitter || p.Jitter > NoJitter:
		return errors.New("retry: unknown Policy.Jitter " + p.Jitter.String())
	case p.Budget != nil && !p.Budget.made:
		// Found here, before anything runs, rather than at the first
		// deposit: Transport.Check reports it, and RoundTrip closes the
		// request's body before it panics.
		return errors.New("retry: use NewBudget to make a Budget")
	}
	return nil
}

// Execute calls fn until it succeeds or the policy says to stop, waiting
// between attempts, and returns nil on success. Each attempt gets ctx (or,
// with AttemptTimeout, a ctx derived from it).
//
// If ctx is done before the first attempt, Execute calls nothing and returns
// ctx.Err() unwrapped. Otherwise, when it gives up after a failed attempt,
// it returns an *Error that wraps the last attempt's error and tells how
// many attempts were made and why it stopped; when the caller's ctx ended,
// after an attempt or during a wait (which then ends at once), the *Error
// matches ctx.Err() too. A wait that would end at or after ctx's deadline or
// MaxElapsed is not started, nor one that an error asks for beyond
// MaxRetryAfter: Execute returns at once instead.
//
// fn, Retryable and OnRetry run in the caller's goroutine; a panic in any of
// them reaches the caller, and the timer of the wait is stopped. Execute
// panics if ctx or fn is nil, or if a field of p is out of range.
func (p Policy) Execute(ctx context.Context, fn func(ctx context.Context) error) error {
	if ctx == nil {
		panic("retry: nil Context")
	}
	if fn == nil {
		panic("retry: nil function")
	}
	p.check()
	if err := ctx.Err(); err != nil {
		return err
	}
	var start time.Time
	if p.MaxElapsed > 0 {
		start = time.Now()
	}
	if p.Budget != nil {
		p.Budget.deposit()
	}
	err := p.attempt(ctx, fn)
	if err == nil {
		return nil
	}
	return p.retry(ctx, fn, err, start)
}

// Do is Execute for a function that returns a value: it returns the value
// and error of the last attempt made (the zero T when none was), the error
// as Execute returns it.
func Do[T any](ctx context.Context, p Policy, fn func(ctx context.Context) (T, error)) (T, error) {
	if fn == nil {
		panic("retry: nil function")
	}
	var v T
	err := p.Execute(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	return v, err
}

// attempt runs fn once, under AttemptTimeout if it is set.
func (p *Policy) attempt(ctx context.Context, fn func(context.Context) error) error {
	if p.AttemptTimeout == 0 {
		return fn(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, p.AttemptTimeout)
	defer cancel() // a panicking fn releases its ctx too
	return fn(actx)
}

// retry is Execute after a first attempt that failed with err: the slow path,
// kept apart so that a success costs no defer and no timer.
func (p *Policy) retry(ctx context.Context, fn func(context.Context) error, err error, start time.Time) error {
	maxAttempts := p.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = defaultAttempts
	}
	b := newBackoff(p)
	maxRetryAfter := p.MaxRetryAfter
	if maxRetryAfter == 0 {
		maxRetryAfter = max(defaultMaxRetryAfter, p.MaxDelay)
	}
	var w waiter
	defer w.stop() // also when fn, Retryable or OnRetry panics
	for n := 1; ; n++ {
		stop := func(r Reason) error { return &Error{Attempts: n, Last: err, Reason: r} }
		// The caller's ctx first: once it has ended, its errors are the
		// caller's own and nothing is retried, whatever Retryable says.
		if cerr := ctx.Err(); cerr != nil {
			return ctxDone(ctx, n, err, cerr)
		}
		if isPermanent(err) || (p.Retryable != nil && !p.Retryable(err)) {
			return stop(NotRetryable)
		}
		if maxAttempts > 0 && n >= maxAttempts {
			return stop(MaxAttemptsReached)
		}
		d := p.delay(&b, n, err)
		own := d // the wait the Policy would make anyway
		floor, _ := retryAfter(err)
		if floor > d {
			// The server's word wins over MaxDelay; a floor of 0 (a
			// half-open breaker) leaves the backoff as it is, so a
			// caller waits its backoff rather than spin (with NoDelay,
			// which asks for no wait, it waits none).
			d = floor
		}
		if deadline, ok := ctx.Deadline(); ok && d >= time.Until(deadline) {
			return stop(DeadlineReached)
		}
		if p.MaxElapsed > 0 && d >= p.MaxElapsed-time.Since(start) {
			return stop(MaxElapsedReached)
		}
		// After the deadline and MaxElapsed, whose reasons say more to the
		// caller, and whatever the backoff drew: the same floor always
		// gets the same answer. A DelayFunc may wait longer than
		// MaxRetryAfter of its own accord: a floor below that wait asks
		// for nothing longer, and is no reason to stop.
		if floor > maxRetryAfter && (p.DelayFunc == nil || floor > own) {
			return stop(MaxRetryAfterExceeded)
		}
		// The budget last: a retry that another rule refuses spends none.
		if p.Budget != nil && !p.Budget.withdraw() {
			return stop(BudgetSpent)
		}
		if p.OnRetry != nil {
			p.OnRetry(n, err, d)
		}
		if cerr := w.wait(ctx, d); cerr != nil {
			return ctxDone(ctx, n, err, cerr)
		}
		if err = p.attempt(ctx, fn); err == nil {
			return nil
		}
	}
}

// waiter waits on one timer, made at the first wait and reused.
type waiter struct{ t *time.Timer }

// wait waits for d, or until ctx ends: then it returns ctx.Err().
func (w *waiter) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if w.t == nil {
		w.t = time.NewTimer(d)
	} else {
		// Since Go 1.23 a Reset timer delivers no stale value, and the
		// previous wait received or stopped it anyway.
		w.t.Reset(d)
	}
	select {
	case <-ctx.Done():
		w.t.Stop()
		// Never nil: a nil here would be taken for a wait served (see
		// waitq.DoneErr).
		return waitq.DoneErr(ctx)
	case <-w.t.C:
		return nil
	}
}

// stop stops the timer, if there is one, so that none is left behind.
func (w *waiter) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}
