package breaker

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// goexitCall runs Execute with fn in a goroutine of its own, waits for it to
// end, and reports whether Execute returned (it must not: fn called Goexit).
func goexitCall(b *Breaker, fn func(context.Context) error) (returned bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Execute(context.Background(), fn)
		returned = true
	}()
	<-done
	return returned
}

func goexit(context.Context) error { runtime.Goexit(); return nil }

// TestReviewGoexitCountsOnceOnEveryPath: fn that calls runtime.Goexit counts
// as one failure, on the fast path, on the slow path (OnCall set), and as a
// trial of a half-open breaker, whose slot it gives back.
func TestReviewGoexitCountsOnceOnEveryPath(t *testing.T) {
	for _, withOnCall := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var calls []CallEvent
			var mu sync.Mutex
			s := Settings{FailureThreshold: 2, OpenTimeout: time.Second, HalfOpenMaxCalls: 1, SuccessThreshold: 1}
			if withOnCall {
				s.OnCall = func(e CallEvent) { mu.Lock(); calls = append(calls, e); mu.Unlock() }
			}
			b := New(s)
			require.False(t, goexitCall(b, goexit))
			c := b.Counts()
			require.Equal(t, int64(1), c.Failures, "closed: one failure")
			require.Equal(t, int64(1), c.Requests)
			require.Equal(t, Closed, b.State())
			require.False(t, goexitCall(b, goexit))
			require.Equal(t, Open, b.State(), "two failures open it")

			time.Sleep(time.Second)
			require.Equal(t, HalfOpen, b.State())
			require.False(t, goexitCall(b, goexit), "a trial that calls Goexit")
			require.Equal(t, Open, b.State(), "a failed trial opens it again")
			require.Equal(t, int64(3), b.Metrics().Total.Failures)

			time.Sleep(time.Hour)
			require.Equal(t, HalfOpen, b.State())
			require.NoError(t, b.Execute(context.Background(), succeed), "the trial slot was given back")
			require.Equal(t, Closed, b.State())
			if withOnCall {
				mu.Lock()
				require.Len(t, calls, 4)
				for _, e := range calls[:3] {
					require.Equal(t, Failure, e.Outcome)
				}
				mu.Unlock()
			}
		})
	}
}

// TestReviewPanickingTrialsGiveBackSlots: half-open with 2 trial slots, two
// trials panic at once: each counts one failure, the breaker opens once, and
// after the open time the slots are free again.
func TestReviewPanickingTrialsGiveBackSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tr transitions
		b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Second, HalfOpenMaxCalls: 2, SuccessThreshold: 2, OnStateChange: tr.record})
		require.Error(t, b.Execute(context.Background(), fail))
		time.Sleep(time.Second)
		release := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				defer func() { require.Equal(t, "trial", recover()) }()
				_ = b.Execute(context.Background(), func(context.Context) error { <-release; panic("trial") })
			})
		}
		synctest.Wait()
		var oe *OpenError
		require.ErrorAs(t, b.Execute(context.Background(), succeed), &oe, "both slots taken")
		close(release)
		wg.Wait()
		require.Equal(t, Open, b.State())
		m := b.Metrics()
		require.Equal(t, int64(3), m.Total.Failures, "one failure closed, one per trial")
		require.Equal(t, []string{"closed>open", "open>half-open", "half-open>open"}, tr.list())
		time.Sleep(time.Hour)
		for range 2 {
			require.NoError(t, b.Execute(context.Background(), succeed))
		}
		require.Equal(t, Closed, b.State())
	})
}

// TestReviewOnCallPanicCountsOnce: an OnCall that panics, after a success
// and after a failure, on each path: the outcome is counted once, the panic
// goes on, and the breaker goes on working.
func TestReviewOnCallPanicCountsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{FailureThreshold: 3, OpenTimeout: time.Second, HalfOpenMaxCalls: 1, SuccessThreshold: 1,
			OnCall: func(e CallEvent) {
				if e.Outcome != Rejected {
					panic("oncall")
				}
			}})
		require.PanicsWithValue(t, "oncall", func() { _ = b.Execute(context.Background(), succeed) })
		require.PanicsWithValue(t, "oncall", func() { _ = b.Execute(context.Background(), fail) })
		c := b.Counts()
		require.Equal(t, int64(1), c.Successes)
		require.Equal(t, int64(1), c.Failures)
		require.Equal(t, int64(2), c.Requests)
		// fn panics and OnCall panics in the deferred count: one failure.
		func() {
			defer func() { recover() }()
			_ = b.Execute(context.Background(), func(context.Context) error { panic("fn") })
		}()
		require.PanicsWithValue(t, "oncall", func() { _ = b.Execute(context.Background(), fail) })
		require.Equal(t, Open, b.State())
		require.Equal(t, int64(3), b.Metrics().Total.Failures, "fn's panic counted once")
		time.Sleep(time.Second)
		require.PanicsWithValue(t, "oncall", func() { _ = b.Execute(context.Background(), succeed) })
		require.Equal(t, Closed, b.State(), "the trial's success closed it, though OnCall panicked")
	})
}
