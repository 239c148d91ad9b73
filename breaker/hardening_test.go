package breaker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// tripOnce opens b with one failing call and returns the refusal that
// follows, if any.
func tripOnce(t *testing.T, ctx context.Context, b *Breaker) {
	t.Helper()
	require.Equal(t, errBoom, b.Execute(ctx, fail))
	require.Equal(t, Open, b.State())
}

// TestHugeOpenTimeoutStaysOpen: an open time near math.MaxInt64, or one that
// Jitter or OpenBackoff pushes past it, keeps the breaker open: the end
// saturates instead of wrapping into the past.
func TestHugeOpenTimeoutStaysOpen(t *testing.T) {
	const years250 = 250 * 365 * 24 * time.Hour
	cases := map[string]Settings{
		"MaxInt64":             {OpenTimeout: math.MaxInt64},
		"250 years, jitter":    {OpenTimeout: years250, Jitter: 0.5},
		"MaxInt64, jitter .99": {OpenTimeout: math.MaxInt64, Jitter: 0.99},
		"backoff MaxInt64":     {OpenBackoff: func(int) time.Duration { return math.MaxInt64 }, Jitter: 0.9},
		"exponential backoff":  {OpenBackoff: ExponentialBackoff(time.Second, math.MaxInt64), Jitter: 0.5},
		"250 years, no jitter": {OpenTimeout: years250},
	}
	for name, s := range cases {
		s.FailureThreshold = 1
		check := func(t *testing.T, ctx context.Context) {
			for range 10 {
				b := New(s)
				if s.OpenBackoff != nil {
					// Push the openings far up the backoff.
					b.openings.Store(200)
				}
				tripOnce(t, ctx, b)
				for i := range 3 * refusalCheck {
					err := b.Execute(ctx, succeed)
					require.ErrorIs(t, err, ErrOpen, "call %d after opening went through", i+1)
				}
				time.Sleep(time.Hour)
				require.Equal(t, Open, b.State())
				var oe *OpenError
				require.ErrorAs(t, b.Execute(ctx, succeed), &oe)
				require.Greater(t, oe.RetryAfter(), 365*24*time.Hour)
			}
		}
		t.Run(name+"/bubble", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { check(t, t.Context()) })
		})
	}
	// Outside a bubble, without sleeping.
	for name, s := range cases {
		s.FailureThreshold = 1
		t.Run(name+"/real", func(t *testing.T) {
			b := New(s)
			tripOnce(t, context.Background(), b)
			for i := range 3 * refusalCheck {
				require.ErrorIs(t, b.Execute(context.Background(), succeed), ErrOpen, "call %d", i+1)
			}
			require.Equal(t, Open, b.State())
		})
	}
}

// TestNegativeOpenBackoffPanics: an OpenBackoff that returns a negative
// duration is misuse; the panic names the package and the breaker stays whole.
func TestNegativeOpenBackoffPanics(t *testing.T) {
	b := New(Settings{FailureThreshold: 1, OpenBackoff: func(int) time.Duration { return -time.Second }})
	require.PanicsWithValue(t, "breaker: OpenBackoff(1) returned -1s, a negative duration", func() {
		_ = b.Execute(context.Background(), fail)
	})
	require.Equal(t, Closed, b.State())
	require.Equal(t, int64(1), b.Counts().Failures)
	require.NoError(t, b.Execute(context.Background(), succeed))
}

// TestLateTrialCounts: a trial call that ends after another trial closed the
// breaker shows in Counts and Metrics, but does not count for the rules of
// the closed breaker.
func TestLateTrialCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		b := New(Settings{FailureThreshold: 1, HalfOpenMaxCalls: 2, SuccessThreshold: 1, OpenTimeout: time.Second})
		tripOnce(t, ctx, b)
		time.Sleep(time.Second)
		done1, err := b.Allow(ctx)
		require.NoError(t, err)
		done2, err := b.Allow(ctx)
		require.NoError(t, err)
		done1(nil)
		require.Equal(t, Closed, b.State())
		done2(errBoom)
		require.Equal(t, Closed, b.State(), "a trial from the half-open state counted for the closed one")
		c := b.Counts()
		require.Equal(t, int64(1), c.Failures, "the late trial is missing from Counts")
		require.Equal(t, int64(1), c.Requests)
		require.Equal(t, int64(0), c.ConsecutiveFailures)
		m := b.Metrics()
		require.Equal(t, int64(1+1+1), m.Total.Requests, "the opening failure, the winning trial, the late one")
		require.Equal(t, int64(2), m.Total.Failures)
	})
}

// TestOpenBackoffRunsOutsideTheLock: OpenBackoff may call the breaker.
func TestOpenBackoffRunsOutsideTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b *Breaker
		var seen []Counts
		b = New(Settings{FailureThreshold: 1, OpenBackoff: func(n int) time.Duration {
			seen = append(seen, b.Counts())
			_ = b.State()
			_ = b.Metrics()
			return time.Duration(n) * time.Second
		}})
		ctx := t.Context()
		tripOnce(t, ctx, b)
		time.Sleep(time.Second)
		require.Equal(t, errBoom, b.Execute(ctx, fail), "the trial fails: open again")
		require.Equal(t, Open, b.State())
		b.ForceOpen()
		b.Reset()
		b.ForceOpen()
		require.Len(t, seen, 4, "the opening, the failed trial, each ForceOpen")
		require.Equal(t, int64(1), seen[0].Failures)
	})
}

// errBadPredicate makes the panicking predicates of these tests panic.
var errBadPredicate = errors.New("bad predicate")

func panickyIsFailure(err error) bool {
	if errors.Is(err, errBadPredicate) {
		panic("IsFailure panicked")
	}
	return err != nil
}

// TestPanickingUserFunctionsLeaveTheBreakerWhole: a panic in any user function
// reaches the caller that ran it, and the breaker keeps no trial slot, no
// lock, and goes on working.
func TestPanickingUserFunctionsLeaveTheBreakerWhole(t *testing.T) {
	halfOpen := func(t *testing.T, s Settings) *Breaker {
		s.FailureThreshold, s.OpenTimeout = 1, time.Second
		b := New(s)
		tripOnce(t, t.Context(), b)
		time.Sleep(time.Second)
		return b
	}
	// usable checks that a trial goes through and closes the breaker.
	usable := func(t *testing.T, b *Breaker) {
		t.Helper()
		if b.State() == Open {
			time.Sleep(time.Hour)
		}
		require.NoError(t, b.Execute(t.Context(), succeed), "the breaker kept a trial slot")
		require.Equal(t, Closed, b.State())
	}
	t.Run("IsFailure in Execute", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := halfOpen(t, Settings{IsFailure: panickyIsFailure})
			require.PanicsWithValue(t, "IsFailure panicked", func() {
				_ = b.Execute(t.Context(), func(context.Context) error { return errBadPredicate })
			})
			require.Equal(t, int64(1), b.Counts().Ignored, "the call with no known outcome")
			usable(t, b)
		})
	})
	t.Run("IsIgnored in done", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := halfOpen(t, Settings{IsIgnored: func(err error) bool {
				if errors.Is(err, errBadPredicate) {
					panic("IsIgnored panicked")
				}
				return false
			}})
			done, err := b.Allow(t.Context())
			require.NoError(t, err)
			require.PanicsWithValue(t, "IsIgnored panicked", func() { done(errBadPredicate) })
			require.PanicsWithValue(t, "breaker: done called twice", func() { done(nil) })
			usable(t, b)
		})
	})
	t.Run("IsFailure closed", func(t *testing.T) {
		b := New(Settings{FailureThreshold: 1, IsFailure: panickyIsFailure})
		require.Panics(t, func() {
			_ = b.Execute(context.Background(), func(context.Context) error { return errBadPredicate })
		})
		require.Equal(t, Counts{Requests: 1, Ignored: 1}, b.Counts())
		require.Equal(t, errBoom, b.Execute(context.Background(), fail))
		require.Equal(t, Open, b.State())
	})
	for name, run := range map[string]func(b *Breaker, ctx context.Context){
		"fn in Execute": func(b *Breaker, ctx context.Context) {
			_ = b.Execute(ctx, func(context.Context) error { panic("fn panicked") })
		},
		"fn in Do": func(b *Breaker, ctx context.Context) {
			_, _ = Do(ctx, b, func(context.Context) (int, error) { panic("fn panicked") })
		},
		"fn before done": func(b *Breaker, ctx context.Context) {
			done, err := b.Allow(ctx)
			if err != nil {
				panic(err)
			}
			ok := false
			defer func() {
				if !ok {
					done(errors.New("panicked"))
				}
			}()
			panic("fn panicked")
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := halfOpen(t, Settings{})
				require.PanicsWithValue(t, "fn panicked", func() { run(b, t.Context()) })
				require.Equal(t, Open, b.State(), "a panicking trial is a failed one")
				usable(t, b)
			})
		})
	}
	t.Run("OnStateChange to half-open", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var tr transitions
			b := halfOpen(t, Settings{OnStateChange: func(from, to State, c Counts) {
				tr.record(from, to, c)
				if to == HalfOpen {
					panic("OnStateChange panicked")
				}
			}})
			called := false
			require.PanicsWithValue(t, "OnStateChange panicked", func() {
				_ = b.Execute(t.Context(), func(context.Context) error { called = true; return nil })
			})
			require.False(t, called, "the call went ahead after its caller's panic")
			require.Equal(t, HalfOpen, b.State())
			usable(t, b)
			require.Equal(t, []string{"closed>open", "open>half-open", "half-open>closed"}, tr.list())
		})
	})
	t.Run("OnStateChange to open", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Second, OnStateChange: func(from, to State, c Counts) {
				if to == Open {
					panic("OnStateChange panicked")
				}
			}})
			require.PanicsWithValue(t, "OnStateChange panicked", func() { _ = b.Execute(t.Context(), fail) })
			require.Equal(t, Open, b.State())
			time.Sleep(time.Second)
			usable(t, b)
		})
	})
	t.Run("OpenBackoff on a failed trial", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var calls int
			b := halfOpen(t, Settings{OpenBackoff: func(n int) time.Duration {
				if calls++; calls == 2 {
					panic("OpenBackoff panicked")
				}
				return time.Second
			}})
			require.PanicsWithValue(t, "OpenBackoff panicked", func() { _ = b.Execute(t.Context(), fail) })
			require.Equal(t, HalfOpen, b.State(), "no duration: the breaker stays as it was")
			require.Equal(t, int64(1), b.Counts().Failures)
			usable(t, b)
		})
	})
}

// TestOpenedInBubbleResetOutside: the timer of an opening made inside a
// synctest bubble must not be stopped from outside it (the runtime dies with
// "stop of synctest timer from outside bubble"): there is none.
func TestOpenedInBubbleResetOutside(t *testing.T) {
	b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Minute})
	synctest.Test(t, func(t *testing.T) { tripOnce(t, t.Context(), b) })
	b.Reset()
	require.Equal(t, Closed, b.State())
	synctest.Test(t, func(t *testing.T) { tripOnce(t, t.Context(), b) })
	b.ForceOpen()
	b.Disable()
	require.Equal(t, errBoom, b.Execute(context.Background(), fail))
}

// TestOpenedLateInBubbleUsedOutside: a bubble whose virtual clock has run
// past the process's start reads a positive clock, like the real one; an
// opening made there must get no timer either, or any change of state after
// the bubble (State finding the opening over, Reset, ForceOpen, a call) stops
// a bubbled timer from outside, and the runtime ends the program.
func TestOpenedLateInBubbleUsedOutside(t *testing.T) {
	var b *Breaker
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(40 * 365 * 24 * time.Hour)
		b = New(Settings{FailureThreshold: 1})
		tripOnce(t, context.Background(), b)
	})
	// The opening was set on the bubble's clock: it counts as over.
	require.Equal(t, HalfOpen, b.State(), "a Breaker made in a bubble works after it ends")
	b.Reset()
	require.Equal(t, Closed, b.State())

	synctest.Test(t, func(t *testing.T) {
		time.Sleep(40 * 365 * 24 * time.Hour)
		tripOnce(t, context.Background(), b)
	})
	b.ForceOpen()
	b.Reset()
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(40 * 365 * 24 * time.Hour)
		tripOnce(t, context.Background(), b)
	})
	require.ErrorIs(t, b.Execute(context.Background(), fail), errBoom, "a trial")
	require.Equal(t, Open, b.State())
	b.Disable()
}

// TestBubbleBoundaries: a breaker that opened inside a synctest bubble is used
// after it ended, and the reverse; neither crashes nor stays open for good.
func TestBubbleBoundaries(t *testing.T) {
	b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Minute})
	synctest.Test(t, func(t *testing.T) {
		tripOnce(t, t.Context(), b)
	})
	// The bubble's clock read 2000: that opening is long over.
	require.Equal(t, HalfOpen, b.State())
	require.NoError(t, b.Execute(context.Background(), succeed))
	require.Equal(t, Closed, b.State())

	synctest.Test(t, func(t *testing.T) {
		tripOnce(t, t.Context(), b)
	})
	b.Reset()
	b.ForceOpen()
	synctest.Test(t, func(t *testing.T) { b.Reset() })
	synctest.Test(t, func(t *testing.T) { tripOnce(t, t.Context(), b) })
	require.ErrorIs(t, b.Execute(context.Background(), fail), errBoom, "a trial")
	require.Equal(t, Open, b.State())
	synctest.Test(t, func(t *testing.T) {
		b.Reset()
		tripOnce(t, t.Context(), b)
		require.ErrorIs(t, b.Execute(t.Context(), succeed), ErrOpen)
		time.Sleep(time.Minute)
		require.NoError(t, b.Execute(t.Context(), succeed))
	})
}

// TestZeroBreaker: the zero Breaker panics at first use, saying to use New.
func TestZeroBreaker(t *testing.T) {
	uses := map[string]func(b *Breaker){
		"Execute": func(b *Breaker) { _ = b.Execute(context.Background(), succeed) },
		"Do": func(b *Breaker) {
			_, _ = Do(context.Background(), b, func(context.Context) (int, error) { return 0, nil })
		},
		"Allow":     func(b *Breaker) { _, _ = b.Allow(context.Background()) },
		"State":     func(b *Breaker) { _ = b.State() },
		"Counts":    func(b *Breaker) { _ = b.Counts() },
		"Metrics":   func(b *Breaker) { _ = b.Metrics() },
		"ForceOpen": func(b *Breaker) { b.ForceOpen() },
		"Reset":     func(b *Breaker) { b.Reset() },
		"Disable":   func(b *Breaker) { b.Disable() },
		"Enable":    func(b *Breaker) { b.Enable() },
	}
	for name, use := range uses {
		t.Run(name, func(t *testing.T) {
			var b Breaker
			require.PanicsWithValue(t, "breaker: use New to make a Breaker", func() { use(&b) })
		})
		// A nil *Breaker, a field never set, panics the same way rather
		// than dereference nil.
		t.Run(name+"/nil", func(t *testing.T) {
			require.PanicsWithValue(t, "breaker: use New to make a Breaker", func() { use(nil) })
		})
	}
}

// TestZeroBreakerWithDoneCtxPanics: the zero Breaker panics at first use even
// when ctx is already done, rather than return ctx.Err() as a whole breaker
// would and hide the misuse until a live ctx comes.
func TestZeroBreakerWithDoneCtxPanics(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	uses := map[string]func(b *Breaker){
		"Execute": func(b *Breaker) { _ = b.Execute(done, succeed) },
		"Do": func(b *Breaker) {
			_, _ = Do(done, b, func(context.Context) (int, error) { return 0, nil })
		},
		"Allow": func(b *Breaker) { _, _ = b.Allow(done) },
	}
	for name, use := range uses {
		t.Run(name, func(t *testing.T) {
			var b Breaker
			require.PanicsWithValue(t, "breaker: use New to make a Breaker", func() { use(&b) })
		})
	}
}

// TestStateAfterOpenTime: State tells the truth without a call coming: an
// open breaker whose time is up is half-open, and the change is reported once.
func TestStateAfterOpenTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr transitions
		b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Second, OnStateChange: tr.record})
		tripOnce(t, t.Context(), b)
		time.Sleep(time.Second - 1)
		require.Equal(t, Open, b.State())
		time.Sleep(time.Nanosecond)
		require.Equal(t, HalfOpen, b.State())
		require.Equal(t, HalfOpen, b.State())
		require.Equal(t, HalfOpen, b.Metrics().State)
		require.Equal(t, []string{"closed>open", "open>half-open"}, tr.list())
		require.NoError(t, b.Execute(t.Context(), succeed))
		require.Equal(t, Closed, b.State())

		// Counts and Metrics see the move too.
		tripOnce(t, t.Context(), b)
		time.Sleep(time.Second)
		require.Equal(t, HalfOpen, b.Metrics().State)
		require.Equal(t, Counts{}, b.Counts())

		// A forced opening has no end.
		b.ForceOpen()
		time.Sleep(time.Hour)
		require.Equal(t, Open, b.State())
		require.Equal(t, Open, b.Metrics().State)
	})
}

// TestConsecutiveFailuresSaturate: the consecutive-failure count stops at its
// maximum instead of carrying into the generation tag beside it.
func TestConsecutiveFailuresSaturate(t *testing.T) {
	b := New(Settings{FailureThreshold: math.MaxInt})
	s := b.state.Load()
	b.consec.Store(consecTag(s) | (consecCount - 1))
	for range 3 {
		require.Equal(t, errBoom, b.Execute(context.Background(), fail))
	}
	require.Equal(t, consecTag(s)|consecCount, b.consec.Load(), "the count carried into the tag")
	require.Equal(t, int64(consecCount), b.Counts().ConsecutiveFailures)
	require.Equal(t, Closed, b.State())
	require.NoError(t, b.Execute(context.Background(), succeed))
	require.Equal(t, int64(0), b.Counts().ConsecutiveFailures)
}

// TestExtremeSettings: counts and sizes at their extremes either work or are
// refused by New with a message that names the field.
func TestExtremeSettings(t *testing.T) {
	for _, s := range []Settings{
		{FailureRateThreshold: 50, WindowSize: math.MaxInt},
		{FailureRateThreshold: 50, WindowDuration: time.Second, WindowBuckets: math.MaxInt},
		{Jitter: math.NaN()},
		{Jitter: -1},
		{Jitter: math.Inf(1)},
		{FailureRateThreshold: math.NaN()},
		{SlowCallDuration: time.Second, SlowCallRateThreshold: math.Inf(1)},
	} {
		func() {
			defer func() {
				r := recover()
				require.NotNil(t, r, "%+v", s)
				require.True(t, strings.HasPrefix(fmt.Sprint(r), "breaker: bad Settings: "), "%v", r)
			}()
			New(s)
		}()
	}
	ctx := context.Background()
	// MinimumCalls above a count window's size would never be reached: the
	// window's size stands in for it.
	b := New(Settings{FailureRateThreshold: 50, WindowSize: 4})
	for range 4 {
		require.Equal(t, errBoom, b.Execute(ctx, fail))
	}
	require.Equal(t, Open, b.State())

	// Thresholds at their maximum never trip; counts at their maximum work.
	b = New(Settings{FailureThreshold: math.MaxInt, HalfOpenMaxCalls: math.MaxInt, SuccessThreshold: math.MaxInt, MinimumCalls: math.MaxInt})
	for range 100 {
		require.Equal(t, errBoom, b.Execute(ctx, fail))
	}
	require.Equal(t, Closed, b.State())

	// A negative FailureThreshold turns the rule off.
	b = New(Settings{FailureThreshold: NoThreshold})
	for range 100 {
		require.Equal(t, errBoom, b.Execute(ctx, fail))
	}
	require.Equal(t, Closed, b.State())

	// Rate rules at their extremes: the tiniest rate, one failure in a
	// window of one, all of the calls.
	for _, s := range []Settings{
		{FailureRateThreshold: math.SmallestNonzeroFloat64, MinimumCalls: 1},
		{FailureRateThreshold: 100, WindowSize: 1},
		{FailureRateThreshold: 100, WindowDuration: time.Nanosecond, WindowBuckets: 1, MinimumCalls: 1},
		{SlowCallDuration: 1, SlowCallRateThreshold: 100, MinimumCalls: 1, Jitter: 1},
	} {
		synctest.Test(t, func(t *testing.T) {
			b := New(s)
			_ = b.Execute(t.Context(), func(context.Context) error { time.Sleep(time.Microsecond); return errBoom })
			require.Equal(t, Open, b.State(), "%+v", s)
		})
	}

	// A time window far longer than any run, and one of a nanosecond.
	for _, d := range []time.Duration{math.MaxInt64, 1} {
		b = New(Settings{FailureRateThreshold: 50, WindowDuration: d, WindowBuckets: 1000, MinimumCalls: 2})
		for range 2 {
			_ = b.Execute(ctx, fail)
		}
		_ = b.Metrics()
	}
}

// TestResetRacesWithTrials: Reset and ForceOpen racing with trial calls leave
// no trial slot taken and Counts that add up.
func TestResetRacesWithTrials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{FailureThreshold: 1, HalfOpenMaxCalls: 3, OpenTimeout: time.Millisecond})
		ctx := t.Context()
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 200 {
					switch (g + i) % 11 {
					case 0:
						b.Reset()
					case 1:
						b.ForceOpen()
					case 2:
						b.Reset()
						_ = b.Execute(ctx, fail)
					default:
						_ = b.Execute(ctx, func(context.Context) error {
							time.Sleep(time.Duration(i%3) * time.Millisecond)
							if i%2 == 0 {
								return errBoom
							}
							return nil
						})
					}
					time.Sleep(time.Duration(i%2) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		m := b.Metrics()
		require.Equal(t, m.Total.Successes+m.Total.Failures+m.Total.Ignored, m.Total.Requests)
		b.Reset()
		tripOnce(t, ctx, b)
		time.Sleep(time.Millisecond)
		for range 3 {
			done, err := b.Allow(ctx)
			require.NoError(t, err, "a trial slot was kept")
			defer done(nil)
		}
	})
}

// TestTimeWindowModel: the time window, which empties only the buckets of
// the stretches that passed since the last call, against a list of dated
// outcomes: after every add and read, the totals are those of the outcomes
// dated in the last len(buckets) stretches.
func TestTimeWindowModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		nb, bucketNs := 1+r.IntN(6), int64(1+r.IntN(5))
		w := newWindow(settings{Settings: Settings{WindowDuration: time.Duration(int64(nb) * bucketNs), WindowBuckets: nb}})
		type dated struct {
			epoch        int64
			failed, slow bool
		}
		var model []dated
		now := int64(r.IntN(100)) - 50
		latest := int64(math.MinInt64)
		for range 100 {
			now += int64(r.IntN(int(bucketNs)*nb*3/2 + 1))
			at := now
			if r.IntN(5) == 0 {
				at -= int64(r.IntN(3)) // a stale reading
			}
			latest = max(latest, at)
			epoch := floorDiv(latest, bucketNs)
			var calls, failures, slows int
			if r.IntN(4) == 0 {
				calls, failures, slows = w.totals(at)
			} else {
				d := dated{epoch, r.IntN(2) == 0, r.IntN(3) == 0}
				model = append(model, d)
				calls, failures, slows, _ = w.add(0, at, d.failed, d.slow)
			}
			var want [3]int
			for _, d := range model {
				if d.epoch > epoch-int64(nb) {
					want[0]++
					if d.failed {
						want[1]++
					}
					if d.slow {
						want[2]++
					}
				}
			}
			require.Equal(t, want, [3]int{calls, failures, slows}, "buckets %d of %dns at %d", nb, bucketNs, at)
		}
	}
}
