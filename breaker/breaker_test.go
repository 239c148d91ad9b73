package breaker

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errBoom = errors.New("boom")

func fail(context.Context) error    { return errBoom }
func succeed(context.Context) error { return nil }

// transitions records OnStateChange calls.
type transitions struct {
	mu  sync.Mutex
	got []string
}

func (tr *transitions) record(from, to State, _ Counts) {
	tr.mu.Lock()
	tr.got = append(tr.got, from.String()+">"+to.String())
	tr.mu.Unlock()
}

func (tr *transitions) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.got...)
}

// TestClassicScenario: threshold 3, timeout 50ms. Three failures open it; the
// fourth call is refused without being made; after the timeout one trial call
// succeeds and closes it.
func TestClassicScenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr transitions
		b := New(Settings{FailureThreshold: 3, OpenTimeout: 50 * time.Millisecond, OnStateChange: tr.record})
		ctx := t.Context()
		for range 3 {
			require.Equal(t, errBoom, b.Execute(ctx, fail))
		}
		require.Equal(t, Open, b.State())

		called := false
		err := b.Execute(ctx, func(context.Context) error { called = true; return nil })
		require.False(t, called, "a refused call was made")
		require.True(t, errors.Is(err, ErrOpen))
		var oe *OpenError
		require.True(t, errors.As(err, &oe))
		require.Equal(t, Open, oe.State)
		require.Equal(t, 50*time.Millisecond, oe.RetryAfter())
		require.Equal(t, int64(1), b.Counts().Rejected)

		time.Sleep(50 * time.Millisecond)
		require.NoError(t, b.Execute(ctx, succeed))
		require.Equal(t, Closed, b.State())
		require.Equal(t, []string{"closed>open", "open>half-open", "half-open>closed"}, tr.list())
	})
}

// TestSuccessBreaksTheRun: the failures that open the breaker must be
// consecutive; a success in between starts the count again, through Execute
// and through Allow's done alike.
func TestSuccessBreaksTheRun(t *testing.T) {
	b := New(Settings{FailureThreshold: 3})
	ctx := context.Background()
	for range 5 {
		require.Equal(t, errBoom, b.Execute(ctx, fail))
		require.Equal(t, errBoom, b.Execute(ctx, fail))
		require.NoError(t, b.Execute(ctx, succeed))
		done, err := b.Allow(ctx)
		require.NoError(t, err)
		done(errBoom)
		done, err = b.Allow(ctx)
		require.NoError(t, err)
		done(nil)
	}
	require.Equal(t, Closed, b.State(), "opened on failures that were not consecutive")
	require.Equal(t, int64(0), b.Counts().ConsecutiveFailures)
	for range 3 {
		require.Equal(t, errBoom, b.Execute(ctx, fail))
	}
	require.Equal(t, Open, b.State())
}

func TestHalfOpenFailureReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr transitions
		b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Second, OnStateChange: tr.record})
		ctx := t.Context()
		require.Error(t, b.Execute(ctx, fail))
		time.Sleep(time.Second)
		require.Equal(t, errBoom, b.Execute(ctx, fail), "the trial call runs")
		require.Equal(t, Open, b.State())
		require.True(t, errors.Is(b.Execute(ctx, succeed), ErrOpen))
		require.Equal(t, []string{"closed>open", "open>half-open", "half-open>open"}, tr.list())
	})
}

// TestHalfOpenProbeLimit: exactly HalfOpenMaxCalls trial calls get through at
// once; the rest are refused at once.
func TestHalfOpenProbeLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Second, HalfOpenMaxCalls: 3})
		require.Error(t, b.Execute(t.Context(), fail))
		time.Sleep(time.Second)

		release := make(chan struct{})
		var through, refused atomic.Int32
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				err := b.Execute(t.Context(), func(context.Context) error {
					through.Add(1)
					<-release
					return nil
				})
				if err != nil {
					var oe *OpenError
					assert.True(t, errors.As(err, &oe))
					assert.Equal(t, HalfOpen, oe.State)
					refused.Add(1)
				}
			})
		}
		synctest.Wait()
		require.Equal(t, int32(3), through.Load())
		require.Equal(t, int32(17), refused.Load())
		require.Equal(t, HalfOpen, b.State())
		close(release)
		wg.Wait()
		require.Equal(t, Closed, b.State(), "3 successes close it (SuccessThreshold defaults to HalfOpenMaxCalls)")
	})
}

func TestSuccessThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Second, SuccessThreshold: 3})
		require.Error(t, b.Execute(t.Context(), fail))
		time.Sleep(time.Second)
		require.Equal(t, HalfOpen, b.State(), "its time is up: half-open, before any call")
		for i := range 3 {
			require.NoError(t, b.Execute(t.Context(), succeed))
			if i < 2 {
				require.Equal(t, HalfOpen, b.State(), "after %d trial successes", i+1)
			}
		}
		require.Equal(t, Closed, b.State())
	})
}

// TestBackoff: a dependency that stays down is probed less and less often.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{FailureThreshold: 1, OpenBackoff: ExponentialBackoff(time.Second, 8*time.Second)})
		ctx := t.Context()
		require.Error(t, b.Execute(ctx, fail))
		var opens []time.Duration
		for range 5 {
			start := time.Now()
			for {
				err := b.Execute(ctx, fail)
				if !errors.Is(err, ErrOpen) {
					break // the trial call, which fails: open again
				}
				var oe *OpenError
				require.True(t, errors.As(err, &oe))
				time.Sleep(oe.RetryAfter())
			}
			opens = append(opens, time.Since(start))
		}
		require.Equal(t, []time.Duration{1, 2, 4, 8, 8}, scale(opens, time.Second))
		require.Equal(t, 6, b.Metrics().Openings)

		// A success closes it and forgets the openings.
		time.Sleep(8 * time.Second)
		require.NoError(t, b.Execute(ctx, succeed))
		require.Equal(t, 0, b.Metrics().Openings)
	})
}

func scale(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d / unit
	}
	return out
}

func TestJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := map[time.Duration]bool{}
		for range 50 {
			b := New(Settings{FailureThreshold: 1, OpenTimeout: 10 * time.Second, Jitter: 0.5})
			require.Error(t, b.Execute(t.Context(), fail))
			var oe *OpenError
			require.True(t, errors.As(b.Execute(t.Context(), succeed), &oe))
			require.GreaterOrEqual(t, oe.RetryAfter(), 5*time.Second)
			require.LessOrEqual(t, oe.RetryAfter(), 15*time.Second)
			seen[oe.RetryAfter()] = true
		}
		require.Greater(t, len(seen), 10, "no spread")
	})
}

func TestFailureRateCountWindow(t *testing.T) {
	b := New(Settings{FailureRateThreshold: 50, WindowSize: 10, MinimumCalls: 6})
	ctx := context.Background()
	// With a rate rule and FailureThreshold 0, consecutive failures alone
	// do not trip it.
	for range 5 {
		require.Error(t, b.Execute(ctx, fail))
	}
	require.Equal(t, Closed, b.State(), "below MinimumCalls")
	require.NoError(t, b.Execute(ctx, succeed)) // 6 calls, 5 failed: 83%
	require.Equal(t, Open, b.State())

	b2 := New(Settings{FailureRateThreshold: 50, WindowSize: 10, MinimumCalls: 10})
	for i := range 40 {
		fn := succeed
		if i%3 == 0 {
			fn = fail
		}
		_ = b2.Execute(ctx, fn)
	}
	require.Equal(t, Closed, b2.State(), "a third failing stays under 50%")
	m := b2.Metrics()
	require.Equal(t, 10, m.WindowCalls)
	require.InDelta(t, 30, m.FailureRate, 10)
	require.Equal(t, float64(0), m.SlowCallRate)
}

func TestFailureRateTimeWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{FailureRateThreshold: 50, WindowDuration: 10 * time.Second, MinimumCalls: 4})
		ctx := t.Context()
		for range 3 {
			require.Error(t, b.Execute(ctx, fail))
		}
		time.Sleep(11 * time.Second) // those failures leave the window
		for range 3 {
			require.NoError(t, b.Execute(ctx, succeed))
		}
		require.Error(t, b.Execute(ctx, fail)) // 1 of 4 in the window
		require.Equal(t, Closed, b.State())
		require.Equal(t, 4, b.Metrics().WindowCalls)
		for range 2 {
			require.Error(t, b.Execute(ctx, fail))
		}
		require.Equal(t, Open, b.State(), "3 of 6")
	})
}

// TestOutcomesOfAnEarlierState: a call admitted before the breaker changes
// state (here, by Reset) and finishing after it counts in Counts, but not for
// the rules, which judge the calls of the current state alone.
func TestOutcomesOfAnEarlierState(t *testing.T) {
	for name, s := range map[string]Settings{
		"consecutive": {FailureThreshold: 2},
		"rate":        {FailureRateThreshold: 50, WindowSize: 2, MinimumCalls: 2},
		"time window": {FailureRateThreshold: 50, WindowDuration: time.Minute, MinimumCalls: 2},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := New(s)
				ctx := t.Context()
				release := make(chan struct{})
				done := make(chan error, 1)
				go func() {
					done <- b.Execute(ctx, func(context.Context) error { <-release; return errBoom })
				}()
				synctest.Wait()
				require.Equal(t, errBoom, b.Execute(ctx, fail))
				b.Reset()
				close(release)
				require.Equal(t, errBoom, <-done)
				require.Equal(t, int64(1), b.Counts().Failures, "counted in Counts")

				require.Equal(t, errBoom, b.Execute(ctx, fail))
				require.Equal(t, Closed, b.State(), "a failure from before the Reset counted for the rules")
				require.Equal(t, errBoom, b.Execute(ctx, fail))
				require.Equal(t, Open, b.State())
			})
		})
	}
}

// TestTimeWindowStaleNow: callers read the clock before they lock the window,
// so one can arrive with a time just before a bucket that another has already
// started. Its outcome counts, and the newer bucket's stay counted.
func TestTimeWindowStaleNow(t *testing.T) {
	w := newWindow(settings{Settings: Settings{WindowDuration: 10 * time.Second, WindowBuckets: 10}})
	boundary := int64(1000 * time.Second) // a bucket starts here
	calls, failures, _, _ := w.add(0, boundary, true, false)
	require.Equal(t, 1, calls)
	require.Equal(t, 1, failures)
	calls, failures, _, _ = w.add(0, boundary-1, true, false) // read the clock a nanosecond earlier
	require.Equal(t, 2, calls, "the stale outcome emptied the newer bucket")
	require.Equal(t, 2, failures)
	calls, _, _ = w.totals(boundary - int64(time.Millisecond)) // Metrics, read before a lock wait
	require.Equal(t, 2, calls)

	// Both were dated in the bucket that starts at the boundary: they leave
	// the window together, a window after it.
	calls, _, _ = w.totals(boundary + int64(10*time.Second) - 1)
	require.Equal(t, 2, calls)
	calls, _, _ = w.totals(boundary + int64(10*time.Second))
	require.Equal(t, 0, calls)

	// A time far behind the latest comes from another clock (a synctest
	// bubble's): the window starts afresh rather than keep outcomes that
	// would never leave it.
	w.add(0, boundary, true, false)
	calls, failures, _, _ = w.add(0, boundary-2*int64(time.Hour), false, false)
	require.Equal(t, 1, calls)
	require.Equal(t, 0, failures)
}

// TestTimeWindowAcrossClocks: outcomes recorded outside a synctest bubble
// are from another clock inside one, and must not linger in its window.
func TestTimeWindowAcrossClocks(t *testing.T) {
	b := New(Settings{FailureRateThreshold: 50, WindowDuration: time.Minute, MinimumCalls: 4})
	for range 3 {
		require.Equal(t, errBoom, b.Execute(context.Background(), fail))
	}
	require.Equal(t, 3, b.Metrics().WindowCalls)
	synctest.Test(t, func(t *testing.T) {
		require.Equal(t, 0, b.Metrics().WindowCalls)
		require.Equal(t, errBoom, b.Execute(t.Context(), fail))
		require.Equal(t, Closed, b.State(), "one failure in the window, under MinimumCalls")
		require.Equal(t, 1, b.Metrics().WindowCalls)
	})
}

func TestSlowCallRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{SlowCallDuration: 100 * time.Millisecond, SlowCallRateThreshold: 50, WindowSize: 4, MinimumCalls: 4})
		ctx := t.Context()
		slowOK := func(context.Context) error { time.Sleep(200 * time.Millisecond); return nil }
		require.NoError(t, b.Execute(ctx, succeed))
		require.NoError(t, b.Execute(ctx, slowOK))
		require.NoError(t, b.Execute(ctx, succeed))
		require.Equal(t, int64(1), b.Counts().Slow)
		require.NoError(t, b.Execute(ctx, slowOK)) // 2 of 4 slow
		require.Equal(t, Open, b.State(), "slow successes still open it")
	})
}

func TestOutcomes(t *testing.T) {
	ctx := context.Background()
	b := New(Settings{FailureThreshold: 2})
	require.Error(t, b.Execute(ctx, fail))
	// Canceled is ignored: it neither resets nor adds to the failures.
	require.Equal(t, context.Canceled, b.Execute(ctx, func(context.Context) error { return context.Canceled }))
	c := b.Counts()
	require.Equal(t, Counts{Requests: 2, Failures: 1, Ignored: 1, ConsecutiveFailures: 1}, c)
	require.Error(t, b.Execute(ctx, fail))
	require.Equal(t, Open, b.State())

	notFound := errors.New("not found")
	b2 := New(Settings{
		FailureThreshold: 1,
		IsFailure:        func(err error) bool { return err != nil && !errors.Is(err, notFound) },
	})
	require.Equal(t, notFound, b2.Execute(ctx, func(context.Context) error { return notFound }))
	require.Equal(t, Closed, b2.State(), "a not-found is an answer, not a failure")
	require.Equal(t, int64(1), b2.Counts().Successes)
	require.Equal(t, int64(1), b2.Counts().ConsecutiveSuccesses)
}

func TestPanicCountsAsFailure(t *testing.T) {
	b := New(Settings{FailureThreshold: 2})
	for range 2 {
		require.PanicsWithValue(t, "kaboom", func() {
			_ = b.Execute(context.Background(), func(context.Context) error { panic("kaboom") })
		})
	}
	require.Equal(t, Open, b.State())
	require.Equal(t, int64(2), b.Metrics().Total.Failures)
}

func TestDoneContext(t *testing.T) {
	b := New(Settings{})
	ctx := testutil.Cancelled()
	called := false
	require.Equal(t, context.Canceled, b.Execute(ctx, func(context.Context) error { called = true; return nil }))
	require.False(t, called)
	_, err := b.Allow(ctx)
	require.Equal(t, context.Canceled, err)
	require.Equal(t, Counts{}, b.Counts(), "a done ctx counted")
}

// TestCallbackReentry: OnStateChange runs outside the lock, so a callback that
// calls the breaker does not deadlock (gobreaker's does: its #37).
func TestCallbackReentry(t *testing.T) {
	var b *Breaker
	var seen []string
	b = New(Settings{FailureThreshold: 1, OnStateChange: func(from, to State, counts Counts) {
		seen = append(seen, to.String()+":"+b.State().String())
		_ = b.Counts()
		_ = b.Metrics()
		if to == Open {
			b.Reset() // a change from inside a change: reported after it
		}
		_ = b.Execute(context.Background(), succeed)
	}})
	require.Error(t, b.Execute(context.Background(), fail))
	// Each callback sees the breaker as its change left it; the Reset made
	// inside the first is reported after it.
	require.Equal(t, []string{"open:open", "closed:closed"}, seen)
	require.Equal(t, Closed, b.State())
}

// TestCallbacksInOrder: from many goroutines, the changes reported form one
// chain: each one starts where the last one ended.
func TestCallbacksInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr transitions
		var inside atomic.Int32
		slowRecord := func(from, to State, c Counts) {
			// Slow, so that changes pile up behind it: they must wait,
			// not be reported beside it.
			if inside.Add(1) != 1 {
				t.Error("OnStateChange called again before it returned")
			}
			time.Sleep(time.Millisecond)
			tr.record(from, to, c)
			inside.Add(-1)
		}
		b := New(Settings{FailureThreshold: 2, OpenTimeout: 10 * time.Millisecond, OnStateChange: slowRecord})
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for range testutil.HammerRounds(100) {
					fn := succeed
					if r.IntN(2) == 0 {
						fn = fail
					}
					_ = b.Execute(t.Context(), fn)
					time.Sleep(time.Duration(r.IntN(5)) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		// State first: it may move the breaker to half-open, and report it.
		final := b.State()
		got := tr.list()
		require.NotEmpty(t, got)
		state := "closed"
		for _, c := range got {
			from, to, _ := cutArrow(c)
			require.Equal(t, state, from, "a change reported out of order in %v", got)
			state = to
		}
		require.Equal(t, final.String(), state)
	})
}

// TestOpenedOnAnotherClock: a breaker opened outside a synctest bubble is
// used inside one, whose clock reads years earlier. Its open time must not
// look decades long: the next calls find it over (within the calls that
// refuse without reading the clock), and a trial closes it.
func TestOpenedOnAnotherClock(t *testing.T) {
	b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Minute})
	require.Equal(t, errBoom, b.Execute(context.Background(), fail))
	require.Equal(t, Open, b.State())
	synctest.Test(t, func(t *testing.T) {
		var err error
		for range 2 * refusalCheck {
			if err = b.Execute(t.Context(), succeed); err == nil {
				break
			}
			require.ErrorIs(t, err, ErrOpen)
		}
		require.NoError(t, err, "still open after %d calls", 2*refusalCheck)
		require.Equal(t, Closed, b.State())
	})
}

func cutArrow(s string) (string, string, bool) {
	for i := range s {
		if s[i] == '>' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func TestForceOpenResetDisable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Second})
		b.ForceOpen()
		require.Equal(t, Open, b.State())
		time.Sleep(time.Hour)
		err := b.Execute(ctx, succeed)
		require.True(t, errors.Is(err, ErrOpen), "a forced-open breaker let a call through")
		// It has no end in time; it says to look again after the open time,
		// not at once.
		var oe *OpenError
		require.ErrorAs(t, err, &oe)
		require.True(t, oe.Forced)
		require.True(t, oe.Until.IsZero(), "Until = %v", oe.Until)
		require.Equal(t, time.Second, oe.RetryAfter())
		require.Equal(t, "breaker: circuit forced open", oe.Error())

		// Forcing a breaker open already keeps the opening, forced.
		b.Reset()
		require.Equal(t, errBoom, b.Execute(ctx, fail))
		require.Equal(t, Open, b.State())
		require.ErrorAs(t, b.Execute(ctx, succeed), &oe)
		require.False(t, oe.Forced)
		b.ForceOpen()
		time.Sleep(time.Hour)
		require.ErrorAs(t, b.Execute(ctx, succeed), &oe)
		require.True(t, oe.Forced)
		require.Equal(t, time.Second, oe.RetryAfter())
		b.Reset()
		require.Equal(t, Closed, b.State())
		require.Equal(t, Counts{}, b.Counts())

		b.Disable()
		for range 10 {
			require.Equal(t, errBoom, b.Execute(ctx, fail), "a disabled breaker refused")
		}
		require.Equal(t, Closed, b.State())
		m := b.Metrics()
		require.True(t, m.Disabled)
		require.Equal(t, int64(10), m.Counts.Failures, "a disabled breaker stopped counting")
		b.Enable()
		require.Error(t, b.Execute(ctx, fail))
		require.Equal(t, Open, b.State())

		b.Disable()
		require.Equal(t, Closed, b.State(), "Disable closes it")
		b.Reset()
		require.False(t, b.Metrics().Disabled, "Reset enables it")
	})
}

func TestAllowTwoStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Second})
		done, err := b.Allow(t.Context())
		require.NoError(t, err)
		done(errBoom)
		require.Equal(t, Open, b.State())
		require.PanicsWithValue(t, "breaker: done called twice", func() { done(nil) })

		done, err = b.Allow(t.Context())
		require.Nil(t, done)
		require.True(t, errors.Is(err, ErrOpen))

		time.Sleep(time.Second)
		done, err = b.Allow(t.Context())
		require.NoError(t, err)
		require.Equal(t, HalfOpen, b.State())
		_, err = b.Allow(t.Context())
		require.True(t, errors.Is(err, ErrOpen), "a second trial call while the first is out")
		done(nil)
		require.Equal(t, Closed, b.State())
	})
}

func TestDo(t *testing.T) {
	b := New(Settings{FailureThreshold: 1})
	v, err := Do(context.Background(), b, func(context.Context) (int, error) { return 42, nil })
	require.NoError(t, err)
	require.Equal(t, 42, v)
	_, err = Do(context.Background(), b, func(context.Context) (string, error) { return "", errBoom })
	require.Equal(t, errBoom, err)
	_, err = Do(context.Background(), b, func(context.Context) (string, error) { return "unreached", nil })
	require.True(t, errors.Is(err, ErrOpen))
}

func TestMetricsTotals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{Name: "db", FailureThreshold: 2, OpenTimeout: time.Second})
		ctx := t.Context()
		require.NoError(t, b.Execute(ctx, succeed))
		require.Error(t, b.Execute(ctx, fail))
		require.Error(t, b.Execute(ctx, fail))
		require.True(t, errors.Is(b.Execute(ctx, succeed), ErrOpen))
		m := b.Metrics()
		require.Equal(t, "db", m.Name)
		require.Equal(t, Open, m.State)
		require.Equal(t, Counts{Rejected: 1}, m.Counts)
		require.Equal(t, Counts{Requests: 3, Successes: 1, Failures: 2, Rejected: 1}, m.Total)
		require.Equal(t, -1.0, m.FailureRate, "no rate rule")
		require.Equal(t, 1, m.Openings)
		require.Contains(t, b.Execute(ctx, succeed).Error(), "breaker: db circuit open")
	})
}

func TestStateString(t *testing.T) {
	require.Equal(t, "closed", Closed.String())
	require.Equal(t, "open", Open.String())
	require.Equal(t, "half-open", HalfOpen.String())
	require.Equal(t, "State(7)", State(7).String())
}

func TestMisuse(t *testing.T) {
	bad := []Settings{
		{FailureRateThreshold: -1},
		{FailureRateThreshold: 101},
		{SlowCallRateThreshold: 50},
		{SlowCallDuration: -time.Second},
		{OpenTimeout: -1},
		{WindowDuration: -1},
		{WindowSize: -1},
		{MinimumCalls: -1},
		{HalfOpenMaxCalls: -1},
		{SuccessThreshold: -1},
		{Jitter: 1.5},
	}
	for _, s := range bad {
		require.Panics(t, func() { New(s) }, "%+v", s)
	}
	require.PanicsWithValue(t, "breaker: bad Settings: SlowCallRateThreshold needs SlowCallDuration",
		func() { New(Settings{SlowCallRateThreshold: 10}) })
	require.Panics(t, func() { ExponentialBackoff(0, time.Second) })
	require.Panics(t, func() { ExponentialBackoff(time.Second, time.Millisecond) })
	b := New(Settings{})
	require.PanicsWithValue(t, "breaker: Execute with nil func", func() { _ = b.Execute(context.Background(), nil) })
	require.PanicsWithValue(t, "breaker: Do with nil func", func() {
		_, _ = Do[int](context.Background(), b, nil)
	})
	require.PanicsWithValue(t, "breaker: nil Context", func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_ = b.Execute(nil, succeed)
	})
}
