package ratelimit_test

// The test suite of golang.org/x/time/rate (rate/rate_test.go), re-expressed
// against TokenBucket. Each peer case is a TestPortXTimeRate<Case>. The peer
// passes explicit times to AllowN and reserveN; here the bubble's virtual
// clock is moved to those times with time.Sleep, since our clock only moves
// forward.
//
// Where the contracts differ by design:
//   - n = 0 (TestLimiterBurst3's last step): AllowN panics on n below 1;
//     the peer allows 0 events for free.
//   - A limit of 0 (TestZeroLimit) and burst 0 (TestWaitInf's NewLimiter(Inf,
//     0)) panic in NewTokenBucket; the nearest we have are the slowest rate
//     we accept, and math.Inf(1) with a burst of 1, which allows no more than
//     burst at a time (ErrExceedsBurst), where the peer's Inf ignores burst.
//   - Every (TestEvery) has no counterpart: the rate is a float of events a
//     second. Every(math.MaxInt64)'s 1.08e-10 a second is refused, as it
//     would take over four years to refill: ValidateTokenBucket says so.
//   - No Reservation: WaitN reserves nothing ahead of time, so a waiter that
//     gives up has nothing to give back and those behind it move up at once.
//     TestReserve* and TestCancel* become waiters in WaitN, and what they
//     "get back" is what the next waiter finds; in TestCancelMulti the waiter
//     behind the cancelled ones is served at t1, not at its reserved t4.
//     TestReserveSetBurst: the next waiter is served at t12, not t9 (the
//     peer's reservation at t0 is dated back, before the SetBurstAt at t3).
//   - reserveN's maxReserve (TestReserveMax) is a ctx deadline:
//     ErrWouldExceedDeadline at once. A wait that would end exactly at the
//     deadline is refused too (the ctx is done then); the peer's maxReserve
//     takes it.
//   - Time never goes backwards: AllowNAt judges a time before the clock's at
//     the clock's, so TestLimiterJumpBackwards becomes "a stale t takes from
//     the bucket as now does", and TestReserveJumpBack, ...Cancel likewise.
//     Outside a bubble, even a t read a moment before the call is stale
//     by then, so a schedule of AllowNAt(t0+k·d) runs a little behind the
//     peer's; the cases sleep in a bubble to the peer's times instead.
//   - TestLongRunningQPS: virtual time is exact, so the count is checked
//     exactly, to the last call, within the peer's bounds.
//   - Skipped: TestLimit (Limit's Inf constant), TestCancelTooLate,
//     TestCancel0Tokens and TestCancel1Token (they cancel a reservation after
//     or partly after its time: nothing of ours is held then),
//     BenchmarkAllowN and BenchmarkWaitNNoDelay (bench/ compares us).

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// xrateD is the peer's unit of time: t1 is one xrateD after t0.
const xrateD = 100 * time.Millisecond

// xrateStep is one AllowN at tick ticks of xrateD after the start.
type xrateStep struct {
	tick int
	n    int
	ok   bool
}

// xrateRun plays steps against b in a bubble, sleeping to each step's time.
func xrateRun(t *testing.T, b *ratelimit.TokenBucket, steps []xrateStep) {
	t.Helper()
	start := time.Now()
	for i, s := range steps {
		if d := time.Until(start.Add(time.Duration(s.tick) * xrateD)); d > 0 {
			time.Sleep(d)
		}
		if got := b.AllowN(s.n); got != s.ok {
			t.Errorf("step %d: AllowN(%d) at t%d = %v, want %v", i, s.n, s.tick, got, s.ok)
		}
	}
}

// xrateOutcome is how a WaitN ended: its error, and when, from the start.
type xrateOutcome struct {
	err   error
	ticks time.Duration
}

// xrateWaitAt starts WaitN(ctx, n) in a goroutine, queued once synctest.Wait
// returns, and returns a channel that gets its outcome, timed from start.
func xrateWaitAt(ctx context.Context, b *ratelimit.TokenBucket, n int, start time.Time) <-chan xrateOutcome {
	ch := make(chan xrateOutcome, 1)
	go func() {
		err := b.WaitN(ctx, n)
		ch <- xrateOutcome{err, time.Since(start)}
	}()
	synctest.Wait()
	return ch
}

func TestPortXTimeRateLimiterBurst1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		xrateRun(t, ratelimit.NewTokenBucket(10, 1), []xrateStep{
			{0, 1, true}, {0, 1, false}, {0, 1, false},
			{1, 1, true}, {1, 1, false}, {1, 1, false},
			{2, 2, false}, // more than the burst: never
			{2, 1, true}, {2, 1, false},
		})
	})
}

func TestPortXTimeRateLimiterBurst3(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 3)
		xrateRun(t, b, []xrateStep{
			{0, 2, true}, {0, 2, false}, {0, 1, true}, {0, 1, false},
			{1, 4, false},
			{2, 1, true}, {3, 1, true}, {4, 1, true}, {4, 1, true},
			{4, 1, false}, {4, 1, false},
			{9, 3, true},
		})
		// The peer's last step allows n = 0; ours is misuse.
		require.PanicsWithValue(t, "ratelimit: TokenBucket.AllowN with n = 0; n must be at least 1",
			func() { b.AllowN(0) })
	})
}

// TestPortXTimeRateLimiterJumpBackwards: the peer lets AllowN's time go back
// and counts from there. Ours judges a time before the clock's at the clock's:
// a stale t finds the bucket as empty as now does, and gets no token twice.
func TestPortXTimeRateLimiterJumpBackwards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 3)
		t0 := time.Now()
		time.Sleep(xrateD)
		require.True(t, b.AllowNAt(1, time.Now())) // at t1
		require.True(t, b.AllowNAt(1, t0))         // t0 is judged at t1
		require.True(t, b.AllowNAt(1, t0))
		require.False(t, b.AllowNAt(1, t0), "a stale time found a token the clock's time had taken")
		require.False(t, b.AllowN(1))
		time.Sleep(xrateD) // t2: one token
		require.True(t, b.AllowNAt(1, t0))
		require.False(t, b.AllowNAt(1, t0))
		require.False(t, b.AllowN(1))
	})
}

func TestPortXTimeRateLimiterNoTruncationErrors(t *testing.T) {
	require.True(t, ratelimit.NewTokenBucket(0.7692307692307693, 1).Allow())
}

// TestPortXTimeRateSimultaneousRequests: 15 callers at once on a bucket of 5
// that barely refills: exactly 5 get a token. In a bubble, so that no token
// comes back while they run, however loaded the machine.
func TestPortXTimeRateSimultaneousRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const burst, callers = 5, 15
		b := ratelimit.NewTokenBucket(1, burst)
		var ok atomic.Int32
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				if b.Allow() {
					ok.Add(1)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, burst, ok.Load())
	})
}

// TestPortXTimeRateLongRunningQPS: five virtual seconds of a call every 2ms
// (500 a second) at 100 a second, burst 100. The peer's bounds count the
// time to the end of the run; virtual time is exact, so the count is too:
// the burst and one token for each 10ms up to the last call, at 4998ms.
func TestPortXTimeRateLongRunningQPS(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, burst = 100, 100
		b := ratelimit.NewTokenBucket(limit, burst)
		var ok atomic.Int32
		var wg sync.WaitGroup
		start := time.Now()
		end := start.Add(5 * time.Second)
		var last time.Duration
		for time.Now().Before(end) {
			last = time.Since(start)
			wg.Go(func() {
				if b.Allow() {
					ok.Add(1)
				}
			})
			time.Sleep(2 * time.Millisecond)
		}
		wg.Wait()
		ideal := burst + limit*last.Seconds()
		require.LessOrEqual(t, float64(ok.Load()), ideal+1)
		require.EqualValues(t, int(ideal), ok.Load())
	})
}

// TestPortXTimeRateSimpleReserve: reservations become waiters, each served
// when its tokens are there.
func TestPortXTimeRateSimpleReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 2)
		start := time.Now()
		require.NoError(t, b.WaitN(t.Context(), 2)) // t0
		require.NoError(t, b.WaitN(t.Context(), 2))
		require.Equal(t, 2*xrateD, time.Since(start))
		time.Sleep(xrateD) // t3: one token
		require.NoError(t, b.WaitN(t.Context(), 2))
		require.Equal(t, 4*xrateD, time.Since(start))
	})
}

func TestPortXTimeRateMix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 2)
		start := time.Now()
		require.ErrorIs(t, b.WaitN(t.Context(), 3), ratelimit.ErrExceedsBurst)
		require.NoError(t, b.WaitN(t.Context(), 2))
		time.Sleep(xrateD) // t1
		require.False(t, b.AllowN(2), "one token at t1")
		w := xrateWaitAt(t.Context(), b, 2, start) // served at t2
		require.False(t, b.AllowN(1), "a newcomer overtook a waiter")
		o := <-w
		require.NoError(t, o.err)
		require.Equal(t, 2*xrateD, o.ticks)
		time.Sleep(xrateD) // t3
		require.True(t, b.AllowN(1))
	})
}

// TestPortXTimeRateCancelInvalid: a WaitN refused for asking more than the
// burst takes nothing, and gives nothing.
func TestPortXTimeRateCancelInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 2)
		start := time.Now()
		require.NoError(t, b.WaitN(t.Context(), 2))
		require.ErrorIs(t, b.WaitN(t.Context(), 3), ratelimit.ErrExceedsBurst)
		require.NoError(t, b.WaitN(t.Context(), 2))
		require.Equal(t, 2*xrateD, time.Since(start), "no extra tokens")
	})
}

// TestPortXTimeRateCancelLast: a waiter for 2 that gives up at t1 leaves the
// bucket as if it had never come: the next waiter for 2 is served at t2.
func TestPortXTimeRateCancelLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 2)
		start := time.Now()
		require.NoError(t, b.WaitN(t.Context(), 2))
		ctx, cancel := context.WithCancel(t.Context())
		w := xrateWaitAt(ctx, b, 2, start)
		time.Sleep(xrateD)
		cancel()
		require.ErrorIs(t, (<-w).err, context.Canceled)
		require.NoError(t, b.WaitN(t.Context(), 2))
		require.Equal(t, 2*xrateD, time.Since(start))
	})
}

// TestPortXTimeRateCancelMulti: A (3), B (1) and C (1) queue behind an empty
// bucket of 4; C then A give up at t1. B, at the head with the token of t1,
// is served then; D, for 3, at t4.
func TestPortXTimeRateCancelMulti(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 4)
		start := time.Now()
		require.NoError(t, b.WaitN(t.Context(), 4))
		ctxA, cancelA := context.WithCancel(t.Context())
		ctxC, cancelC := context.WithCancel(t.Context())
		wA := xrateWaitAt(ctxA, b, 3, start)
		wB := xrateWaitAt(t.Context(), b, 1, start)
		wC := xrateWaitAt(ctxC, b, 1, start)
		time.Sleep(xrateD)
		synctest.Wait()
		cancelC()
		cancelA()
		require.ErrorIs(t, (<-wC).err, context.Canceled)
		require.ErrorIs(t, (<-wA).err, context.Canceled)
		oB := <-wB
		require.NoError(t, oB.err)
		require.Equal(t, xrateD, oB.ticks)
		require.NoError(t, b.WaitN(t.Context(), 3))
		require.Equal(t, 4*xrateD, time.Since(start))
	})
}

// TestPortXTimeRateReserveJumpBack: a take dated before the clock's time
// counts at the clock's: it cannot find tokens twice.
func TestPortXTimeRateReserveJumpBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 2)
		t0 := time.Now()
		time.Sleep(xrateD)
		require.True(t, b.AllowNAt(2, time.Now())) // t1
		require.False(t, b.AllowNAt(1, t0), "a take dated t0 broke the limit")
		require.NoError(t, b.WaitN(t.Context(), 2))
		require.Equal(t, 3*xrateD, time.Since(t0))
	})
}

// TestPortXTimeRateReserveJumpBackCancel: as the peer's, with waiters: the
// one that gives up gives nothing back, and the limit holds.
func TestPortXTimeRateReserveJumpBackCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 2)
		t0 := time.Now()
		time.Sleep(xrateD)
		require.True(t, b.AllowN(2)) // t1
		ctx, cancel := context.WithCancel(t.Context())
		w := xrateWaitAt(ctx, b, 2, t0)             // would be served at t3
		wNext := xrateWaitAt(t.Context(), b, 1, t0) // behind it
		cancel()
		require.ErrorIs(t, (<-w).err, context.Canceled)
		o := <-wNext
		require.NoError(t, o.err)
		require.Equal(t, 2*xrateD, o.ticks, "the waiter behind moves up")
		require.False(t, b.AllowNAt(1, t0), "a stale time found a token")
	})
}

// TestPortXTimeRateReserveSetLimit: a waiter for 2 at 5/s, with SetRate(10)
// at t2, is served at t3 (the token of t2 stays, the next comes at the new
// rate); a waiter for 1 behind it at t4.
func TestPortXTimeRateReserveSetLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(5, 2)
		start := time.Now()
		require.NoError(t, b.WaitN(t.Context(), 2))
		wA := xrateWaitAt(t.Context(), b, 2, start)
		time.Sleep(2 * xrateD)
		b.SetRate(10)
		wB := xrateWaitAt(t.Context(), b, 1, start)
		oA, oB := <-wA, <-wB
		require.NoError(t, oA.err)
		require.NoError(t, oB.err)
		require.Equal(t, 3*xrateD, oA.ticks)
		require.Equal(t, 4*xrateD, oB.ticks)
	})
}

// TestPortXTimeRateReserveSetBurst: a waiter for 2 at 5/s is served at t4;
// after SetBurst(4) at t3, a waiter for 4 behind it at t12 (the peer's t9
// dates its reservation back to t0).
func TestPortXTimeRateReserveSetBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(5, 2)
		start := time.Now()
		require.NoError(t, b.WaitN(t.Context(), 2))
		wA := xrateWaitAt(t.Context(), b, 2, start)
		time.Sleep(3 * xrateD)
		b.SetBurst(4)
		wB := xrateWaitAt(t.Context(), b, 4, start)
		oA, oB := <-wA, <-wB
		require.NoError(t, oA.err)
		require.NoError(t, oB.err)
		require.Equal(t, 4*xrateD, oA.ticks)
		require.Equal(t, 12*xrateD, oB.ticks)
	})
}

// TestPortXTimeRateReserveSetLimitCancel: a waiter for 2 that gives up after
// SetRate(10) at t2 leaves the bucket's token: the next waiter for 2 is
// served at t3.
func TestPortXTimeRateReserveSetLimitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(5, 2)
		start := time.Now()
		require.NoError(t, b.WaitN(t.Context(), 2))
		ctx, cancel := context.WithCancel(t.Context())
		w := xrateWaitAt(ctx, b, 2, start)
		time.Sleep(2 * xrateD)
		b.SetRate(10)
		cancel()
		require.ErrorIs(t, (<-w).err, context.Canceled)
		require.NoError(t, b.WaitN(t.Context(), 2))
		require.Equal(t, 3*xrateD, time.Since(start))
	})
}

// TestPortXTimeRateReserveMax: the peer's maxReserve is the ctx's deadline:
// a wait that would end past it fails at once, taking nothing.
func TestPortXTimeRateReserveMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 2)
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), xrateD)
		defer cancel()
		require.NoError(t, b.WaitN(ctx, 2))
		ctx2, cancel2 := context.WithTimeout(t.Context(), xrateD+xrateD/2)
		defer cancel2()
		require.NoError(t, b.WaitN(ctx2, 1)) // at t1, within reach
		require.Equal(t, xrateD, time.Since(start))
		ctx3, cancel3 := context.WithTimeout(t.Context(), xrateD/2)
		defer cancel3()
		err := b.WaitN(ctx3, 1) // t2 is out of reach
		require.ErrorIs(t, err, ratelimit.ErrWouldExceedDeadline)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, xrateD, time.Since(start), "failed at once")
		require.NoError(t, b.WaitN(t.Context(), 1))
		require.Equal(t, 2*xrateD, time.Since(start), "the refused wait took nothing")
	})
}

func TestPortXTimeRateWaitSimple(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 3)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		require.Equal(t, context.Canceled, b.WaitN(ctx, 1), "already-cancelled")
		require.ErrorIs(t, b.WaitN(t.Context(), 4), ratelimit.ErrExceedsBurst)
		start := time.Now()
		require.NoError(t, b.WaitN(t.Context(), 2))
		require.Zero(t, time.Since(start), "act-now")
		require.NoError(t, b.WaitN(t.Context(), 3))
		require.Equal(t, 2*xrateD, time.Since(start), "act-later")
	})
}

// TestPortXTimeRateWaitCancel: a wait for 3 cancelled after one tick returns
// context.Canceled then, and the 2 tokens there are then are the next
// caller's at once.
func TestPortXTimeRateWaitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 3)
		ctx, cancel := context.WithCancel(t.Context())
		require.NoError(t, b.WaitN(ctx, 2))
		start := time.Now()
		go func() {
			time.Sleep(xrateD)
			cancel()
		}()
		require.Equal(t, context.Canceled, b.WaitN(ctx, 3))
		require.Equal(t, xrateD, time.Since(start))
		require.InDelta(t, 2, b.Tokens(), 1e-9)
		require.NoError(t, b.WaitN(t.Context(), 2))
		require.Equal(t, xrateD, time.Since(start), "act-now-after-cancel")
	})
}

func TestPortXTimeRateWaitTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(10, 3)
		ctx, cancel := context.WithTimeout(t.Context(), xrateD)
		defer cancel()
		start := time.Now()
		require.NoError(t, b.WaitN(ctx, 2))
		require.ErrorIs(t, b.WaitN(ctx, 3), context.DeadlineExceeded)
		require.Zero(t, time.Since(start), "the hopeless wait fails at once")
	})
}

// TestPortXTimeRateWaitInf: the peer's Inf ignores the burst; ours allows
// every call of at most burst events, and refuses more with ErrExceedsBurst.
func TestPortXTimeRateWaitInf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(math.Inf(1), 3)
		start := time.Now()
		for range 100 {
			require.NoError(t, b.WaitN(t.Context(), 3))
		}
		require.Zero(t, time.Since(start))
		require.ErrorIs(t, b.WaitN(t.Context(), 4), ratelimit.ErrExceedsBurst)
		require.Panics(t, func() { ratelimit.NewTokenBucket(math.Inf(1), 0) })
	})
}

// TestPortXTimeRateZeroLimit: a rate of 0 is refused; the slowest rate we
// take, with a burst of 1, allows once and then not for years.
func TestPortXTimeRateZeroLimit(t *testing.T) {
	require.Panics(t, func() { ratelimit.NewTokenBucket(0, 1) })
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(1e-8, 1)
		require.True(t, b.Allow())
		require.False(t, b.Allow())
		ctx, cancel := context.WithTimeout(t.Context(), 365*24*time.Hour)
		defer cancel()
		require.ErrorIs(t, b.Wait(ctx), ratelimit.ErrWouldExceedDeadline)
	})
}

// TestPortXTimeRateEvery: the peer's Every at its extremes, as rates: one a
// nanosecond is kept; one per math.MaxInt64 nanoseconds is refused with an
// error, not a wrapped duration.
func TestPortXTimeRateEvery(t *testing.T) {
	require.NoError(t, ratelimit.ValidateTokenBucket(1e9, 1))
	require.Equal(t, 1e9, ratelimit.NewTokenBucket(1e9, 1).Rate())
	err := ratelimit.ValidateTokenBucket(1e9/float64(math.MaxInt64), 1)
	require.Error(t, err)
	require.False(t, errors.Is(err, context.DeadlineExceeded))
	require.Panics(t, func() { ratelimit.NewTokenBucket(1e9/float64(math.MaxInt64), 1) })
}

// TestPortXTimeRateFarDeadline: a wait under a deadline near the largest
// time (the overflow cases): the deadline saturates, the wait is not refused
// as out of reach, and it is served when the token comes.
func TestPortXTimeRateFarDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := ratelimit.NewTokenBucket(1e-7, 1) // a token every 10^7 s
		require.True(t, b.Allow())
		far := time.Unix(0, 0).Add(math.MaxInt64)
		ctx, cancel := context.WithDeadline(t.Context(), far)
		defer cancel()
		start := time.Now()
		require.NoError(t, b.Wait(ctx))
		require.Equal(t, 1e7*time.Second, time.Since(start))
		d := b.Take(2)
		require.False(t, d.Allowed)
		require.Equal(t, ratelimit.Never, d.RetryAfter)
	})
}
