package breaker

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOnCallToldOfRefusalWhoseUnlockPanics: a call refused under the lock,
// whose unlock reports changes of state left queued by an OnStateChange that
// panicked, and panics in turn, is told to OnCall all the same: it was
// counted as rejected.
func TestOnCallToldOfRefusalWhoseUnlockPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var told atomic.Int64
		entered, explode := make(chan struct{}), make(chan struct{})
		var first atomic.Bool
		b := New(Settings{
			FailureThreshold: 1, OpenTimeout: time.Second, HalfOpenMaxCalls: 1,
			OnStateChange: func(from, to State, _ Counts) {
				if !first.Swap(true) {
					close(entered)
					<-explode
				}
				panic("listener exploded")
			},
			OnCall: func(e CallEvent) {
				if e.Outcome == Rejected {
					told.Add(1)
				}
			},
		})
		ctx := t.Context()
		var wg sync.WaitGroup
		wg.Go(func() {
			// Opens the breaker, and reports it: slowly, then panics.
			require.PanicsWithValue(t, "listener exploded", func() { _ = b.Execute(ctx, fail) })
		})
		<-entered
		time.Sleep(time.Second)
		// A trial, let through: its move to half-open waits in the queue
		// for the report under way.
		done, err := b.Allow(ctx)
		require.NoError(t, err)
		close(explode)
		wg.Wait()
		// Refused (the trial slot is taken), under the lock, whose unlock
		// reports the move to half-open, and panics.
		require.PanicsWithValue(t, "listener exploded", func() { _ = b.Execute(ctx, succeed) })
		require.PanicsWithValue(t, "listener exploded", func() { done(nil) }) // closes it
		require.Equal(t, b.Metrics().Total.Rejected, told.Load(), "the refusals told to OnCall")
	})
}

// TestOnCallResetsTheBreaker: OnCall may Reset or ForceOpen the breaker,
// even from a trial; a call whose done comes after a Reset is told once, and
// the counts add up.
func TestOnCallResetsTheBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b *Breaker
		var mu sync.Mutex
		told := map[Outcome]int64{}
		b = New(Settings{FailureThreshold: 1, OpenTimeout: time.Second, HalfOpenMaxCalls: 2,
			OnCall: func(e CallEvent) {
				mu.Lock()
				told[e.Outcome]++
				mu.Unlock()
				switch e.Outcome {
				case Failure:
					b.ForceOpen()
				case Rejected:
					b.Reset()
				}
			}})
		ctx := t.Context()
		require.ErrorIs(t, b.Execute(ctx, fail), errBoom)
		require.Equal(t, Open, b.State())
		require.ErrorIs(t, b.Execute(ctx, succeed), ErrOpen) // and its OnCall resets
		require.Equal(t, Closed, b.State())
		done, err := b.Allow(ctx)
		require.NoError(t, err)
		b.Reset()
		done(nil)
		m := b.Metrics()
		require.Equal(t, int64(1), m.Total.Successes, "the call done after the Reset counts after it")
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, map[Outcome]int64{Failure: 1, Rejected: 1, Success: 1}, told)
	})
}

// TestOnCallToldOfPrecheckRefusal: a refusal of Transport.Precheck counts as
// rejected, and so is told to OnCall: the caller acts on it as on a refusal
// of RoundTrip.
func TestOnCallToldOfPrecheckRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var told [Rejected + 1]atomic.Int64
		tr := &Transport{Base: &statusBase{}, Settings: Settings{
			FailureThreshold: 1, OpenTimeout: time.Second, HalfOpenMaxCalls: 1,
			OnCall: func(e CallEvent) { told[e.Outcome].Add(1) },
		}}
		req, err := http.NewRequest(http.MethodGet, "http://a.test/500", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		b := tr.Breaker("a.test")
		require.ErrorIs(t, tr.Precheck(req), ErrOpen)
		time.Sleep(time.Second)
		done, err := b.Allow(t.Context())
		require.NoError(t, err)
		require.ErrorIs(t, tr.Precheck(req), ErrOpen) // the one trial slot is taken
		done(nil)
		m := b.Metrics()
		require.EqualValues(t, 2, m.Total.Rejected)
		require.Equal(t, m.Total.Rejected, told[Rejected].Load(), "the refusals told to OnCall")
		require.Equal(t, m.Total.Successes, told[Success].Load())
		require.Equal(t, m.Total.Failures, told[Failure].Load())
	})
}

// TestOnCallAfterItsChangeOfState: a call whose outcome opens or closes the
// breaker is told to OnCall after OnStateChange is told of the change.
func TestOnCallAfterItsChangeOfState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log []string
		b := New(Settings{FailureThreshold: 1, OpenTimeout: time.Second,
			OnStateChange: func(from, to State, _ Counts) { log = append(log, from.String()+"->"+to.String()) },
			OnCall:        func(e CallEvent) { log = append(log, e.Outcome.String()+" in "+e.State.String()) },
		})
		_ = b.Execute(t.Context(), fail)
		time.Sleep(time.Second)
		_ = b.Execute(t.Context(), succeed)
		require.Equal(t, []string{
			"closed->open", "failure in closed",
			"open->half-open", "half-open->closed", "success in half-open",
		}, log)
	})
}
