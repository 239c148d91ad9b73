package breaker_test

// The test suite of github.com/sony/gobreaker v2 (v2/gobreaker_test.go),
// re-expressed against Breaker. Each peer case is a TestPortGobreaker<Case>.
// The peer moves its clock by editing the breaker's expiry; here the
// bubble's virtual clock moves with time.Sleep.
//
// Where the contracts differ by design:
//   - Defaults: five consecutive failures and 30s open; the peer's are six
//     and 60s. The cases set FailureThreshold 6 and OpenTimeout 60s to play
//     the peer's default breaker.
//   - ReadyToTrip is not a callback: the peer's custom rule (at least 3
//     requests, 60% failed) is FailureRateThreshold 60 with MinimumCalls 3.
//     The peer's Interval (counts cleared every 30s while closed) is a
//     time-based window of one 30s bucket; its rolling window (BucketPeriod
//     3s) is WindowDuration 30s in 10 buckets. The rules see the window;
//     Counts are those of the whole state, so they are not cleared every
//     Interval, and the window's totals (Metrics) stand for the peer's
//     counts there. The window's buckets sit on a grid of the clock, so
//     those cases first sleep to a bucket's start.
//   - Counts: Requests counts calls that have ended, not calls admitted; a
//     refused call counts in Rejected (the peer counts nothing).
//   - MaxRequests splits in two: HalfOpenMaxCalls, trial calls in flight at
//     once, and SuccessThreshold, successes that close. With two trials done
//     and one in flight out of 3, the peer refuses a fourth call; ours lets
//     it through (one slot is in use), and its success closes the breaker.
//   - Generations: ours change with the state, not with the peer's Interval.
//     A call from an earlier state shows in Counts when it ends, but counts
//     toward no rule (and not in the window). TestGeneration becomes a call
//     admitted while closed that ends after the breaker opened and went
//     half-open, and one that ends after it closed again.
//   - OnStateChange takes (from, to, counts); the name is Settings.Name.
//   - The State values differ (Open is 1, HalfOpen 2) and an unknown one
//     prints as "State(100)"; the names are the peer's.
//   - Negative durations in Settings are refused (Validate's error, New's
//     panic), where the peer takes them for the defaults.
//   - IsSuccessful is IsFailure, its negation; the peer's swap of it on a
//     live breaker has no counterpart (Settings are fixed by New): a second
//     breaker plays the second half.
//   - The two-step breaker is Allow(ctx), which returns done(err).
//   - The peer's checks of its fields (expiry, the bucket list) become checks
//     of what we export: State, Counts, Metrics, OpenError.
//   - The parallel cases run 10 goroutines of 1000 calls (the peer's 10000),
//     the machine being shared.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/internal/clock"
)

var errGobreakerFail = errors.New("port_gobreaker_test: fail")

func gbSucceed(b *breaker.Breaker) error {
	return b.Execute(context.Background(), func(context.Context) error { return nil })
}

// gbFail runs a failing call, and returns nil if it ran, the refusal if not.
func gbFail(b *breaker.Breaker) error {
	err := b.Execute(context.Background(), func(context.Context) error { return errGobreakerFail })
	if err == errGobreakerFail {
		return nil
	}
	return err
}

// gbSucceedLater starts a call that succeeds after delay, admitted once
// synctest.Wait returns.
func gbSucceedLater(b *breaker.Breaker, delay time.Duration) <-chan error {
	ch := make(chan error, 1)
	go func() {
		ch <- b.Execute(context.Background(), func(context.Context) error {
			time.Sleep(delay)
			return nil
		})
	}()
	synctest.Wait()
	return ch
}

func gbSucceed2Step(b *breaker.Breaker) error {
	done, err := b.Allow(context.Background())
	if err != nil {
		return err
	}
	done(nil)
	return nil
}

func gbFail2Step(b *breaker.Breaker) error {
	done, err := b.Allow(context.Background())
	if err != nil {
		return err
	}
	done(errGobreakerFail)
	return nil
}

// gbCounts are the peer's five counts, read from ours.
type gbCounts struct{ requests, successes, failures, consecSuccesses, consecFailures int64 }

func gbCountsOf(b *breaker.Breaker) gbCounts {
	c := b.Counts()
	return gbCounts{c.Requests, c.Successes, c.Failures, c.ConsecutiveSuccesses, c.ConsecutiveFailures}
}

// gbWindow returns the window's calls and failures, the peer's counts when it
// has an Interval or a rolling window.
func gbWindow(b *breaker.Breaker) (calls, failures int) {
	m := b.Metrics()
	return m.WindowCalls, int(m.FailureRate*float64(m.WindowCalls)/100 + 0.5)
}

// gbChanges records OnStateChange.
type gbChanges struct {
	mu   sync.Mutex
	last [2]breaker.State
	n    int
}

func (c *gbChanges) record(from, to breaker.State, _ breaker.Counts) {
	c.mu.Lock()
	c.last = [2]breaker.State{from, to}
	c.n++
	c.mu.Unlock()
}

func (c *gbChanges) get() [2]breaker.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// gbAlign sleeps to the start of a stretch of d on the package's clock,
// where a time-based window's buckets of d begin.
func gbAlign(d time.Duration) {
	if r := ((clock.Now() % int64(d)) + int64(d)) % int64(d); r != 0 {
		time.Sleep(d - time.Duration(r))
	}
}

// gbPeerDefault plays the peer's default breaker.
func gbPeerDefault(name string) breaker.Settings {
	return breaker.Settings{Name: name, FailureThreshold: 6, OpenTimeout: 60 * time.Second}
}

// gbCustom plays the peer's custom breaker: a 30s Interval (one bucket), and
// rolling, its rolling window of ten 3s buckets.
func gbCustom(name string, rolling bool, ch *gbChanges) breaker.Settings {
	s := breaker.Settings{
		Name:                 name,
		FailureThreshold:     breaker.NoThreshold,
		FailureRateThreshold: 60,
		MinimumCalls:         3,
		WindowDuration:       30 * time.Second,
		WindowBuckets:        1,
		OpenTimeout:          90 * time.Second,
		HalfOpenMaxCalls:     3,
		OnStateChange:        ch.record,
	}
	if rolling {
		s.WindowBuckets = 10
	}
	return s
}

func TestPortGobreakerStateConstants(t *testing.T) {
	require.Equal(t, breaker.State(0), breaker.Closed)
	require.Equal(t, "closed", breaker.Closed.String())
	require.Equal(t, "half-open", breaker.HalfOpen.String())
	require.Equal(t, "open", breaker.Open.String())
	require.Equal(t, "State(100)", breaker.State(100).String())
}

func TestPortGobreakerNewCircuitBreaker(t *testing.T) {
	for _, s := range []breaker.Settings{{}, gbCustom("cb", false, new(gbChanges)), gbCustom("rw", true, new(gbChanges))} {
		b := breaker.New(s)
		m := b.Metrics()
		require.Equal(t, s.Name, m.Name)
		require.Equal(t, breaker.Closed, m.State)
		require.Equal(t, breaker.Counts{}, m.Counts)
	}
	neg := breaker.Settings{Name: "ncb", OpenTimeout: -90 * time.Second, WindowDuration: -30 * time.Second}
	require.Error(t, neg.Validate())
	require.PanicsWithValue(t, neg.Validate().Error(), func() { breaker.New(neg) })
}

// gbDefaultScenario plays the peer's default (and two-step) scenario with
// succeed and fail.
func gbDefaultScenario(t *testing.T, b *breaker.Breaker, succeed, fail func(*breaker.Breaker) error) {
	for range 5 {
		require.NoError(t, fail(b))
	}
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, gbCounts{5, 0, 5, 0, 5}, gbCountsOf(b))

	require.NoError(t, succeed(b))
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, gbCounts{6, 1, 5, 1, 0}, gbCountsOf(b))

	require.NoError(t, fail(b))
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, gbCounts{7, 1, 6, 0, 1}, gbCountsOf(b))

	// Closed to open: six consecutive failures.
	for range 5 {
		require.NoError(t, fail(b))
	}
	require.Equal(t, breaker.Open, b.State())
	require.Equal(t, gbCounts{}, gbCountsOf(b))

	var oe *breaker.OpenError
	require.ErrorAs(t, succeed(b), &oe)
	require.Equal(t, 60*time.Second, oe.RetryAfter())
	require.ErrorIs(t, fail(b), breaker.ErrOpen)
	require.Equal(t, gbCounts{}, gbCountsOf(b))
	require.EqualValues(t, 2, b.Counts().Rejected)

	time.Sleep(59 * time.Second)
	require.Equal(t, breaker.Open, b.State())

	// Open to half-open.
	time.Sleep(time.Second)
	require.Equal(t, breaker.HalfOpen, b.State())

	// Half-open to open.
	require.NoError(t, fail(b))
	require.Equal(t, breaker.Open, b.State())
	require.Equal(t, gbCounts{}, gbCountsOf(b))

	// Open to half-open.
	time.Sleep(60 * time.Second)
	require.Equal(t, breaker.HalfOpen, b.State())

	// Half-open to closed.
	require.NoError(t, succeed(b))
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, gbCounts{}, gbCountsOf(b))
}

func TestPortGobreakerDefaultCircuitBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New(gbPeerDefault(""))
		require.Equal(t, "", b.Metrics().Name)
		gbDefaultScenario(t, b, gbSucceed, gbFail)
	})
}

func TestPortGobreakerTwoStepCircuitBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New(gbPeerDefault("tscb"))
		require.Equal(t, "tscb", b.Metrics().Name)
		gbDefaultScenario(t, b, gbSucceed2Step, gbFail2Step)
	})
}

// gbHalfOpenToClosed plays the end of the custom and rolling cases: from
// open, half-open after 90s, two trials succeed, a third runs, and a fourth
// (refused by the peer, let through by us) closes the breaker; the third,
// ending in the closed state, counts in no rule.
func gbHalfOpenToClosed(t *testing.T, b *breaker.Breaker, ch *gbChanges) {
	time.Sleep(90 * time.Second)
	require.Equal(t, breaker.HalfOpen, b.State())
	require.Equal(t, [2]breaker.State{breaker.Open, breaker.HalfOpen}, ch.get())

	require.NoError(t, gbSucceed(b))
	require.NoError(t, gbSucceed(b))
	require.Equal(t, breaker.HalfOpen, b.State())
	require.Equal(t, gbCounts{2, 2, 0, 2, 0}, gbCountsOf(b))

	later := gbSucceedLater(b, 100*time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, gbCounts{2, 2, 0, 2, 0}, gbCountsOf(b), "Requests counts calls that ended")
	require.NoError(t, gbSucceed(b), "a slot of HalfOpenMaxCalls is free")
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, [2]breaker.State{breaker.HalfOpen, breaker.Closed}, ch.get())
	require.NoError(t, <-later)
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, gbCounts{1, 1, 0, 1, 0}, gbCountsOf(b), "the trial that ended after closing shows in Counts")
	calls, _ := gbWindow(b)
	require.Zero(t, calls, "a trial of the half-open state entered the closed state's window")
}

func TestPortGobreakerCustomCircuitBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gbAlign(30 * time.Second)
		ch := new(gbChanges)
		b := breaker.New(gbCustom("cb", false, ch))
		require.Equal(t, "cb", b.Metrics().Name)

		for range 5 {
			require.NoError(t, gbSucceed(b))
			require.NoError(t, gbFail(b))
		}
		require.Equal(t, breaker.Closed, b.State())
		require.Equal(t, gbCounts{10, 5, 5, 0, 1}, gbCountsOf(b))

		time.Sleep(29 * time.Second)
		require.NoError(t, gbSucceed(b))
		require.Equal(t, breaker.Closed, b.State())
		require.Equal(t, gbCounts{11, 6, 5, 1, 0}, gbCountsOf(b))

		time.Sleep(time.Second) // past the Interval: the window starts again
		require.NoError(t, gbFail(b))
		require.Equal(t, breaker.Closed, b.State())
		calls, failures := gbWindow(b)
		require.Equal(t, [2]int{1, 1}, [2]int{calls, failures})
		require.Equal(t, gbCounts{12, 6, 6, 0, 1}, gbCountsOf(b), "Counts are the state's")

		// Closed to open: 2 failures of 3.
		require.NoError(t, gbSucceed(b))
		require.NoError(t, gbFail(b))
		require.Equal(t, breaker.Open, b.State())
		require.Equal(t, gbCounts{}, gbCountsOf(b))
		require.Equal(t, [2]breaker.State{breaker.Closed, breaker.Open}, ch.get())

		gbHalfOpenToClosed(t, b, ch)
	})
}

func TestPortGobreakerRollingWindowCircuitBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gbAlign(3 * time.Second)
		ch := new(gbChanges)
		b := breaker.New(gbCustom("rw", true, ch))
		require.Equal(t, "rw", b.Metrics().Name)
		window := func(wantCalls, wantFailures int) {
			t.Helper()
			calls, failures := gbWindow(b)
			require.Equal(t, [2]int{wantCalls, wantFailures}, [2]int{calls, failures}, "window (calls, failures)")
		}

		for range 5 {
			require.NoError(t, gbSucceed(b))
			require.NoError(t, gbFail(b))
		}
		require.Equal(t, breaker.Closed, b.State())
		window(10, 5)

		time.Sleep(3 * time.Second)
		require.NoError(t, gbSucceed(b))
		window(11, 5)
		time.Sleep(2 * time.Second)
		require.NoError(t, gbSucceed(b))
		window(12, 5)
		time.Sleep(2 * time.Second)
		require.NoError(t, gbSucceed(b))
		window(13, 5)
		time.Sleep(2 * time.Second)
		require.NoError(t, gbFail(b))
		window(14, 6)

		for i := range 6 { // fill every bucket
			time.Sleep(3 * time.Second)
			require.NoError(t, gbSucceed(b))
			require.NoError(t, gbFail(b))
			window(16+2*i, 7+i)
		}

		time.Sleep(3 * time.Second) // the first bucket leaves
		require.NoError(t, gbFail(b))
		window(17, 8)
		for i := range 5 {
			require.NoError(t, gbFail(b))
			window(18+i, 9+i)
		}
		require.Equal(t, breaker.Closed, b.State())

		require.NoError(t, gbFail(b)) // 14 of 23 failed: over 60%
		require.Equal(t, breaker.Open, b.State())
		require.Equal(t, [2]breaker.State{breaker.Closed, breaker.Open}, ch.get())

		gbHalfOpenToClosed(t, b, ch)
	})
}

func TestPortGobreakerPanicInRequest(t *testing.T) {
	b := breaker.New(gbPeerDefault(""))
	require.PanicsWithValue(t, "oops", func() {
		_ = b.Execute(context.Background(), func(context.Context) error { panic("oops") })
	})
	require.Equal(t, gbCounts{1, 0, 1, 0, 1}, gbCountsOf(b))
}

// TestPortGobreakerGeneration: a call admitted while closed that ends after
// the breaker opened and went half-open neither closes it (success) nor opens
// it (failure), nor takes a trial slot; one admitted before the breaker
// closed again adds nothing to the new state's consecutive failures.
func TestPortGobreakerGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, oldFails := range []bool{false, true} {
			b := breaker.New(breaker.Settings{FailureThreshold: 2, OpenTimeout: time.Second})
			old := make(chan error, 1)
			release := make(chan struct{})
			go func() {
				old <- b.Execute(context.Background(), func(context.Context) error {
					<-release
					if oldFails {
						return errGobreakerFail
					}
					return nil
				})
			}()
			synctest.Wait()
			require.NoError(t, gbFail(b))
			require.NoError(t, gbFail(b))
			require.Equal(t, breaker.Open, b.State())
			time.Sleep(time.Second)
			require.Equal(t, breaker.HalfOpen, b.State())

			close(release)
			<-old
			require.Equal(t, breaker.HalfOpen, b.State(), "a call of the closed state decided the half-open one")
			require.Equal(t, int64(1), b.Counts().Requests, "the old call shows in Counts")
			require.NoError(t, gbSucceed(b), "the trial slot was taken by an old call")
			require.Equal(t, breaker.Closed, b.State())
		}

		// An old failure ending in a later closed state.
		b := breaker.New(breaker.Settings{FailureThreshold: 2, OpenTimeout: time.Second})
		old := make(chan error, 1)
		release := make(chan struct{})
		go func() {
			old <- b.Execute(context.Background(), func(context.Context) error { <-release; return errGobreakerFail })
		}()
		synctest.Wait()
		require.NoError(t, gbFail(b))
		require.NoError(t, gbFail(b))
		time.Sleep(time.Second)
		require.NoError(t, gbSucceed(b))
		require.Equal(t, breaker.Closed, b.State())
		require.NoError(t, gbFail(b)) // one failure of the new state
		close(release)
		require.Equal(t, errGobreakerFail, <-old)
		require.Equal(t, int64(1), b.Counts().ConsecutiveFailures, "an old failure counted toward the threshold")
		require.Equal(t, breaker.Closed, b.State())
	})
}

// TestPortGobreakerCustomIsSuccessful: an IsFailure that says no makes
// failing calls count as successes; the default opens the breaker.
func TestPortGobreakerCustomIsSuccessful(t *testing.T) {
	s := gbPeerDefault("")
	s.IsFailure = func(error) bool { return false }
	b := breaker.New(s)
	for range 5 {
		require.NoError(t, gbFail(b))
	}
	require.Equal(t, breaker.Closed, b.State())
	require.Equal(t, gbCounts{5, 5, 0, 5, 0}, gbCountsOf(b))

	b = breaker.New(gbPeerDefault(""))
	for range 6 {
		require.NoError(t, gbFail(b))
	}
	require.Equal(t, breaker.Open, b.State())
}

func gbInParallel(t *testing.T, b *breaker.Breaker) {
	const goroutines, calls = 10, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range calls {
				if err := gbSucceed(b); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	const total = goroutines * calls
	require.Equal(t, gbCounts{total, total, 0, total, 0}, gbCountsOf(b))
}

func TestPortGobreakerCircuitBreakerInParallel(t *testing.T) {
	gbInParallel(t, breaker.New(gbCustom("cb", false, new(gbChanges))))
	gbInParallel(t, breaker.New(gbPeerDefault("")))
}

func TestPortGobreakerRollingWindowCircuitBreakerInParallel(t *testing.T) {
	gbInParallel(t, breaker.New(gbCustom("rw", true, new(gbChanges))))
}
