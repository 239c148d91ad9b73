package ratelimit

import (
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/internal/nocopy"
	"github.com/ctxsync/ctxsync/internal/waitq"
)

// A TokenBucket allows events at a steady rate, with bursts: it holds up to
// burst tokens, refills at rate tokens per second, and each event takes one.
// It starts full. With a burst of 1 it spaces events evenly: a pacer.
//
// It is a GCRA (generic cell rate algorithm): its whole state is one number,
// the theoretical arrival time of the next event, which Allow moves forward
// with a single compare-and-swap after a single read of the monotonic clock.
// The state only moves forward, so a goroutine that read the clock a moment
// before another cannot give out tokens twice (x/time/rate can: golang/go#71360).
// The one exception is All, which gives back tokens a refused call took: by
// no more than it took, and never to before what the takes made since would
// have left without them (see refund).
//
// Its clock counts nanoseconds, so a token costs a whole number of them,
// rounded up: above a million events per second the rate kept may be below
// the one asked for, the more so the higher (3e8 a second is kept as 2.5e8),
// and any rate above 1e9 a second is kept as 1e9 a second, one token a
// nanosecond. To limit bytes on a fast link, count them in larger units
// (kibibytes, say). The rate kept is never above the one asked for: in any
// interval of length d, at most burst + rate·d events are allowed.
//
// Waiters in WaitN are served first in, first out, and while any waits, Allow
// and Take refuse, so that no newcomer overtakes them.
//
// In a testing/synctest bubble, whose clock runs years behind the real one,
// a bucket made outside finds its state from another clock and starts full;
// what the bubble then takes is dated on the bubble's clock, long past for
// the real one, so callers outside find the bucket full again. A bucket shared
// by both sides limits each side, not the two together.
//
// Use NewTokenBucket; the zero TokenBucket is not usable: its methods panic.
// A TokenBucket must not be copied after first use. It is safe for concurrent
// use by multiple goroutines.
type TokenBucket struct {
	_ nocopy.NoCopy

	// params is read by every call and written only by SetRate and
	// SetBurst. It sits apart from state, with w's padding between them,
	// so that a grant on one core does not evict it from another's cache.
	params atomic.Pointer[bucketParams]
	w      waiters

	// state is tat<<2 | tbQueued | tbBusy, where tat is the theoretical
	// arrival time, in nanoseconds of the package's clock (see nowNs). The
	// bucket is full when tat is at or before now, and empty when tat is
	// burstNs after now. With a flag set, only the holder of w's lock
	// changes it.
	state atomic.Int64
}

const (
	tbQueued = 1 << iota // goroutines wait in WaitN: Allow refuses
	tbBusy               // SetRate or SetBurst is at work: wait for it
	tbFlags  = tbQueued | tbBusy
	tbShift  = 2

	// tbNever is the tat of a bucket that was never used: far enough in the
	// past to be full, even seen from a synctest bubble's clock.
	tbNever = -(1 << 60)
	// tbMaxBurstNs bounds the time to refill, so that sums of times fit.
	tbMaxBurstNs = 1 << 57
	// tbMinNow and tbMaxNow bound the times the bucket sees, so that tat
	// fits in the 61 bits state keeps for it: the clock reads from about
	// 36 years before the process started (a synctest bubble's clock
	// starts in 2000) to about 54 years after. Beyond, in a bubble that
	// slept for decades or in an AllowNAt of a time far off, the bucket's
	// time stops: it no longer refills, rather than wrap and give out
	// tokens without end.
	tbMinNow = tbNever
	tbMaxNow = 3 << 59
)

// clampNow bounds now between tbMinNow and tbMaxNow.
func clampNow(now int64) int64 { return min(max(now, tbMinNow), tbMaxNow) }

// errZeroBucket is the panic of a zero TokenBucket's first use.
const errZeroBucket = "ratelimit: use NewTokenBucket; the zero TokenBucket is not usable"

// check panics if b was not made by NewTokenBucket.
func (b *TokenBucket) check() { b.load() }

// load returns the parameters, or panics if the bucket was not made by
// NewTokenBucket.
func (b *TokenBucket) load() *bucketParams {
	p := b.params.Load()
	if p == nil {
		panic(errZeroBucket)
	}
	return p
}

// NewTokenBucket returns a full TokenBucket that refills at rate tokens per
// second up to burst tokens. A rate of math.Inf(1) allows every event of at
// most burst tokens.
//
// NewTokenBucket panics if rate is not above 0 (or is NaN), if burst is below
// 1, or if refilling an empty bucket would take over four years (so rates
// below about 7e-9 a second are refused whatever the burst). A rate above
// 1e9 is kept as 1e9 (see TokenBucket). ValidateTokenBucket checks the same
// without panicking.
func NewTokenBucket(rate float64, burst int) *TokenBucket {
	b := new(TokenBucket)
	b.params.Store(newBucketParams(rate, burst, "NewTokenBucket"))
	b.state.Store(tbNever << tbShift)
	return b
}

// Allow reports whether one event may happen now, and if so takes a token.
func (b *TokenBucket) Allow() bool { return b.take(1, nowNs(), false, nil, nil) }

// AllowN reports whether n events may happen now, and if so takes n tokens.
// When it returns false it takes nothing. It returns false while goroutines
// wait in WaitN.
//
// AllowN panics if n is below 1.
func (b *TokenBucket) AllowN(n int) bool {
	checkN(n, "TokenBucket.AllowN")
	return b.take(n, nowNs(), false, nil, nil)
}

// AllowNAt is AllowN at time t. A t earlier than the clock's time, however
// stale, is judged at the clock's, which AllowNAt reads: the bucket has
// refilled since t for every caller, and tokens dated t would be found again
// by the next caller. A t ahead of the clock is judged at t. A t over an hour
// ahead of the clock looks like a time of another clock (a synctest
// bubble's, which runs years behind the real one), and later calls at the
// clock's time forget what it took.
func (b *TokenBucket) AllowNAt(n int, t time.Time) bool {
	checkN(n, "TokenBucket.AllowNAt")
	return b.take(n, atNs(t), true, nil, nil)
}

func (b *TokenBucket) allowAt(n int, now int64) bool { return b.take(n, now, false, nil, nil) }

func (b *TokenBucket) takeAt(n int, now int64) Decision {
	var d Decision
	b.take(n, now, false, &d, nil)
	return d
}

// Take is AllowN with the details of the decision.
//
// Take panics if n is below 1.
func (b *TokenBucket) Take(n int) Decision {
	checkN(n, "TokenBucket.Take")
	var d Decision
	b.take(n, nowNs(), false, &d, nil)
	return d
}

// take takes n tokens at now if it may, and fills d if it is not nil. given
// says now is the caller's time (AllowNAt), not a reading of the clock. If g
// is not nil, a grant fills it with what refund needs to give the tokens back.
func (b *TokenBucket) take(n int, now int64, given bool, d *Decision, g *grant) bool {
	now = clampNow(now)
	if given {
		// A given time before the clock's is judged at the clock's: the
		// bucket has refilled since then, for everyone, and a take dated
		// then would leave it fuller than a take now, so that the next
		// caller found the tokens just given out there again.
		now = max(now, clampNow(nowNs()))
	}
	for {
		p := b.load()
		s := b.state.Load()
		if s&tbBusy != 0 {
			b.w.q.Lock() // the setter holds it: wait for it
			//lint:ignore SA2001 locking is the wait: the setter holds the lock while the busy bit is set
			b.w.q.Unlock()
			continue
		}
		if b.params.Load() != p {
			continue // a setter changed both since we looked: look again
		}
		tat := b.base(s, now, p, given)
		newTat := tat + int64(n)*p.tokenNs
		ok := s&tbQueued == 0 && n <= p.burst && newTat-now <= p.burstNs
		if ok && !b.state.CompareAndSwap(s, newTat<<tbShift) {
			continue
		}
		if ok && g != nil {
			*g = grant{at: newTat, cost: int64(n) * p.tokenNs}
		}
		if d != nil {
			if ok {
				tat = newTat
			}
			b.decide(d, ok, n, now, tat, p)
		}
		return ok
	}
}

// base returns the time from which the next token is counted: tat, or now if
// tat has passed. given says now is a time the caller gave (AllowNAt), not a
// reading of the clock.
func (b *TokenBucket) base(s, now int64, p *bucketParams, given bool) int64 {
	tat := s >> tbShift
	// State from another clock (see clockJump) starts full. It is judged
	// against the later of now and the clock: a given time hours stale (a
	// request's arrival, replayed late) is not a bubble's clock, and must
	// find the bucket as empty as the clock's time does; a given time ahead
	// of the clock counts from what earlier calls at such times took. Only
	// then is the clock read again: the hot path reads it once.
	if tat > now+p.burstNs+clockJump && (!given || tat > clampNow(nowNs())+p.burstNs+clockJump) {
		return now
	}
	return max(tat, now)
}

func (b *TokenBucket) decide(d *Decision, ok bool, n int, now, tat int64, p *bucketParams) {
	d.Allowed = ok
	d.Limit = p.burst
	d.Window = time.Duration(p.burstNs)
	debt := tat - now // how far the bucket is from full
	if p.tokenNs == 0 {
		d.Remaining = p.burst
	} else {
		d.Remaining = max(0, int((p.burstNs-debt)/p.tokenNs))
	}
	d.ResetAfter = time.Duration(debt)
	switch {
	case ok:
		d.RetryAfter = 0
	case n > p.burst:
		d.RetryAfter = Never
	default:
		// When n tokens will be there, after those queued in WaitN.
		b.w.q.Lock()
		ahead := b.w.queued
		b.w.q.Unlock()
		d.RetryAfter = time.Duration(max(0, subSat(p.fitsAfter(tat, queuedSum(ahead, n)), now)))
	}
}

// Wait waits until a token is available, after the goroutines already
// waiting, then takes it: WaitN(ctx, 1). On failure it returns ctx.Err(), or
// ErrWouldExceedDeadline when the token cannot come before ctx's deadline,
// and takes nothing; a ctx already done fails even when a token is
// available.
func (b *TokenBucket) Wait(ctx context.Context) error { return b.WaitN(ctx, 1) }

// WaitN waits until n tokens are available, after the goroutines already
// waiting, then takes them.
//
// It fails at once with ErrExceedsBurst if n is above the burst, and with
// ErrWouldExceedDeadline if the tokens cannot come before the deadline of
// ctx; a SetRate or SetBurst while it waits checks both again. Otherwise, on
// failure, it returns ctx.Err() and takes nothing; a ctx that is already done
// fails even when tokens are available. A waiter that gives up reserved
// nothing, so nothing is lost: the next waiter moves up.
//
// WaitN panics if n is below 1.
func (b *TokenBucket) WaitN(ctx context.Context, n int) error {
	checkN(n, "TokenBucket.WaitN")
	b.load() // the zero bucket panics even with a done ctx
	if err := waitq.CtxErr(ctx, "ratelimit"); err != nil {
		return err
	}
	if b.take(n, nowNs(), false, nil, nil) {
		return nil
	}
	return b.w.waitN(ctx, (*bucketWaitable)(b), n)
}

// Tokens returns the number of tokens in the bucket at the moment of the call.
func (b *TokenBucket) Tokens() float64 {
	p := b.load()
	now := clampNow(nowNs())
	if p.tokenNs == 0 {
		return float64(p.burst)
	}
	debt := b.base(b.state.Load(), now, p, false) - now
	return float64(p.burstNs-debt) / float64(p.tokenNs)
}

// Rate returns the rate, in tokens per second.
func (b *TokenBucket) Rate() float64 { return b.load().rate }

// Burst returns the burst: the most tokens the bucket holds.
func (b *TokenBucket) Burst() int { return b.load().burst }

// SetRate changes the rate. The tokens in the bucket stay; goroutines waiting
// in WaitN are served at the new rate, and those whose ctx deadline it puts out
// of reach fail at once with ErrWouldExceedDeadline, as they would have on
// entry; those behind them move up.
//
// SetRate panics if rate is not above 0 (or is NaN), or if refilling would
// take over four years; the bucket is then left as it was.
func (b *TokenBucket) SetRate(rate float64) {
	b.set(func(p *bucketParams) *bucketParams { return newBucketParams(rate, p.burst, "TokenBucket.SetRate") })
}

// SetBurst changes the burst. The tokens in the bucket stay, up to the new
// burst. Goroutines waiting in WaitN for more than the new burst fail at once
// with ErrExceedsBurst, and those whose ctx deadline a smaller burst puts out
// of reach with ErrWouldExceedDeadline; those behind them move up.
//
// SetBurst panics if burst is below 1, or if refilling would take over four
// years; the bucket is then left as it was.
func (b *TokenBucket) SetBurst(burst int) {
	b.set(func(p *bucketParams) *bucketParams { return newBucketParams(p.rate, burst, "TokenBucket.SetBurst") })
}

// set swaps the parameters for those change makes of them, keeping the tokens.
func (b *TokenBucket) set(change func(*bucketParams) *bucketParams) {
	b.load()
	b.w.q.Lock()
	defer b.w.q.Unlock()
	old := b.params.Load()
	p := change(old) // may panic on bad input: nothing has changed yet
	// Stop the fast paths while the parameters and the state disagree.
	var s int64
	for {
		s = b.state.Load()
		if b.state.CompareAndSwap(s, s|tbBusy) {
			break
		}
	}
	now := clampNow(nowNs())
	credit := old.burstNs - (b.base(s, now, old, false) - now) // the tokens held, in ns
	b.params.Store(p)
	tat := now + p.burstNs - carryCredit(credit, old, p)
	b.state.Store(tat<<tbShift | s&tbQueued)
	b.w.refuseLocked((*bucketWaitable)(b), now)
	b.w.kickLocked()
}

// bucketWaitable is a TokenBucket seen by its waiters.
type bucketWaitable TokenBucket

func (b *bucketWaitable) maxLocked() int { return b.params.Load().burst }

func (b *bucketWaitable) takeLocked(n int, now int64) (bool, int64) {
	tb := (*TokenBucket)(b)
	p := b.params.Load()
	now = clampNow(now)
	for {
		s := b.state.Load()
		newTat := tb.base(s, now, p, false) + int64(n)*p.tokenNs
		if wait := newTat - now - p.burstNs; wait > 0 {
			if now == tbMaxNow {
				return false, math.MaxInt64 // the bucket's time has stopped
			}
			return false, wait
		}
		if b.state.CompareAndSwap(s, newTat<<tbShift|s&tbQueued) {
			return true, 0
		}
	}
}

func (b *bucketWaitable) earliestLocked(ahead, n int, now int64) int64 {
	tb := (*TokenBucket)(b)
	p := b.params.Load()
	return p.fitsAfter(tb.base(b.state.Load(), clampNow(now), p, false), queuedSum(ahead, n))
}

func (b *bucketWaitable) setQueuedLocked(queued bool) {
	for {
		s := b.state.Load()
		next := s &^ tbQueued
		if queued {
			next = s | tbQueued
		}
		if b.state.CompareAndSwap(s, next) {
			return
		}
	}
}
