package breaker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// callLog keeps what OnCall was told, as lines.
type callLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *callLog) onCall(e CallEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := "ok"
	if e.Err != nil {
		err = e.Err.Error()
	}
	l.lines = append(l.lines, fmt.Sprintf("%v %v %v %s", e.Outcome, e.State, e.Duration, err))
}

func (l *callLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.lines
	l.lines = nil
	return s
}

// sleepy returns a call that takes d, then returns err.
func sleepy(d time.Duration, err error) func(context.Context) error {
	return func(context.Context) error {
		time.Sleep(d)
		return err
	}
}

// TestOnCallTellsEveryCall: each call's outcome, state and duration, in
// virtual time, through Execute and Allow, refusals included.
func TestOnCallTellsEveryCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log callLog
		b := New(Settings{FailureThreshold: 2, OpenTimeout: time.Minute, OnCall: log.onCall})
		ctx := t.Context()
		require.NoError(t, b.Execute(ctx, sleepy(time.Second, nil)))
		require.ErrorIs(t, b.Execute(ctx, sleepy(2*time.Second, context.Canceled)), context.Canceled)
		require.ErrorIs(t, b.Execute(ctx, sleepy(3*time.Second, errBoom)), errBoom)
		done, err := b.Allow(ctx)
		require.NoError(t, err)
		time.Sleep(4 * time.Second)
		done(errBoom) // opens it
		require.ErrorIs(t, b.Execute(ctx, sleepy(time.Second, nil)), ErrOpen)
		_, err = b.Allow(ctx)
		require.ErrorIs(t, err, ErrOpen)
		require.Equal(t, []string{
			"success closed 1s ok",
			"ignored closed 2s context canceled",
			"failure closed 3s boom",
			"failure closed 4s boom",
			"rejected open 0s " + b.openErr.Load().Error(),
			"rejected open 0s " + b.openErr.Load().Error(),
		}, log.take())

		// Half-open: one trial, the second refused; the trial closes it.
		time.Sleep(time.Minute)
		done, err = b.Allow(ctx)
		require.NoError(t, err)
		require.ErrorIs(t, b.Execute(ctx, sleepy(time.Second, nil)), ErrOpen)
		done(nil)
		require.Equal(t, Closed, b.State())
		lines := log.take()
		require.Len(t, lines, 2)
		require.Regexp(t, "^rejected half-open 0s ", lines[0])
		require.Equal(t, "success half-open 0s ok", lines[1])

		// A call that panics is a failure; one with a done ctx is not a
		// call at all.
		require.Panics(t, func() { _ = b.Execute(ctx, func(context.Context) error { panic("x") }) })
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		require.ErrorIs(t, b.Execute(cctx, sleepy(0, nil)), context.Canceled)
		require.Equal(t, []string{"failure closed 0s " + errPanic.Error()}, log.take())

		// Disabled, calls are told as let through closed.
		b.Disable()
		require.NoError(t, b.Execute(ctx, sleepy(time.Second, nil)))
		require.Equal(t, []string{"success closed 1s ok"}, log.take())
	})
}

// TestOnCallPanicLeavesTheBreakerWhole: OnCall that panics reaches the
// caller; the call is counted and its trial slot given back.
func TestOnCallPanicLeavesTheBreakerWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Second, OnCall: func(CallEvent) { panic("hook exploded") }})
		ctx := t.Context()
		require.PanicsWithValue(t, "hook exploded", func() { _ = b.Execute(ctx, succeed) })
		require.PanicsWithValue(t, "hook exploded", func() { _ = b.Execute(ctx, fail) })
		require.Equal(t, Open, b.State())
		require.PanicsWithValue(t, "hook exploded", func() { _ = b.Execute(ctx, succeed) }) // refused
		time.Sleep(time.Second)
		for range 3 {
			// Each trial gives its slot back: with one slot, a kept one
			// would refuse the next.
			require.PanicsWithValue(t, "hook exploded", func() { _ = b.Execute(ctx, fail) })
			time.Sleep(time.Second)
		}
		require.PanicsWithValue(t, "hook exploded", func() { _ = b.Execute(ctx, succeed) })
		require.Equal(t, Closed, b.State())
		m := b.Metrics()
		require.Equal(t, int64(2), m.Total.Successes)
		require.Equal(t, int64(4), m.Total.Failures)
		require.Equal(t, int64(1), m.Total.Rejected)
	})
}

// TestOnCallCallsTheBreaker: OnCall runs outside the lock, so it may use the
// breaker, even as the call it tells of opens it.
func TestOnCallCallsTheBreaker(t *testing.T) {
	var b *Breaker
	var states []State
	b = New(Settings{FailureThreshold: 1, OnCall: func(CallEvent) {
		states = append(states, b.State())
		_ = b.Metrics()
	}})
	_ = b.Execute(context.Background(), fail)
	_ = b.Execute(context.Background(), succeed)
	require.Equal(t, []State{Open, Open}, states)
}

// TestOnCallCountsMatchMetrics: under concurrent calls with random outcomes
// and cancellations, what OnCall is told adds up to Metrics.Total.
func TestOnCallCountsMatchMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		told := map[Outcome]int64{}
		b := New(Settings{
			FailureRateThreshold: 50, WindowSize: 20, MinimumCalls: 5,
			OpenTimeout: 10 * time.Millisecond, HalfOpenMaxCalls: 2,
			OnCall: func(e CallEvent) {
				mu.Lock()
				told[e.Outcome]++
				mu.Unlock()
			},
		})
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 200 {
					ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i%5)*time.Millisecond)
					var err error
					switch (g + i) % 4 {
					case 0:
						err = errBoom
					case 1:
						err = context.Canceled
					}
					_ = b.Execute(ctx, sleepy(time.Duration(i%3)*time.Millisecond, err))
					cancel()
				}
			})
		}
		wg.Wait()
		m := b.Metrics()
		require.Equal(t, m.Total.Successes, told[Success])
		require.Equal(t, m.Total.Failures, told[Failure])
		require.Equal(t, m.Total.Ignored, told[Ignored])
		require.Equal(t, m.Total.Rejected, told[Rejected])
	})
}

func TestOutcomeString(t *testing.T) {
	require.Equal(t, "success", Success.String())
	require.Equal(t, "rejected", Rejected.String())
	require.Equal(t, "Outcome(0)", Outcome(0).String())
	require.Equal(t, "Outcome(-3)", Outcome(-3).String())
}
