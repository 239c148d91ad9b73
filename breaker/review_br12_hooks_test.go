package breaker

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// Regression: Transport.OnStateChange was called after
// Settings.OnStateChange in one function, so when the latter panicked the
// former was skipped: a host's metrics or alerts (Transport's hook) missed
// the change that the panicking hook was told of, and showed a breaker in a
// state it had left. Both are user hooks, and one panicking must not
// silence the other. Right: Transport.OnStateChange is still told of every
// change, in order; the panic goes on to the caller whose call made the
// change (as Settings.OnStateChange's doc says); and the breaker is whole:
// its state, counts and trial slots as if no hook had panicked.
func TestTransportHookRunsWhenSettingsHookPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var own, each []string
		tr := &Transport{
			Base: &statusBase{},
			Settings: Settings{
				FailureThreshold: 1,
				OpenTimeout:      time.Second,
				OnStateChange: func(from, to State, _ Counts) {
					own = append(own, from.String()+">"+to.String())
					if to != Closed {
						panic("own hook")
					}
				},
			},
			OnStateChange: func(host string, from, to State, _ Counts) {
				each = append(each, host+": "+from.String()+">"+to.String())
			},
		}
		ctx := context.Background()
		require.PanicsWithValue(t, "own hook", func() { send(t, tr, ctx, "http://a.test/503") },
			"the panic of Settings.OnStateChange on the opening")
		b := tr.Breaker("a.test")
		require.Equal(t, Open, b.State())
		require.EqualValues(t, 1, b.Metrics().Total.Failures)

		time.Sleep(time.Second)
		require.PanicsWithValue(t, "own hook", func() { send(t, tr, ctx, "http://a.test/ok") },
			"the panic of Settings.OnStateChange on the move to half-open")
		require.Equal(t, HalfOpen, b.State())
		require.Zero(t, b.probes, "the call whose move to half-open panicked kept its trial slot")

		_, _, err := send(t, tr, ctx, "http://a.test/ok")
		require.NoError(t, err)
		require.Equal(t, Closed, b.State())
		require.Equal(t, []string{"closed>open", "open>half-open", "half-open>closed"}, own)
		require.Equal(t, []string{"a.test: closed>open", "a.test: open>half-open", "a.test: half-open>closed"}, each,
			"Transport.OnStateChange missed the changes that Settings.OnStateChange panicked on")
		m := b.Metrics()
		require.EqualValues(t, 2, m.Total.Requests)
		require.EqualValues(t, 1, m.Total.Successes)
	})
}

// As above, with Settings.OnStateChange ending its goroutine
// (runtime.Goexit, as t.FailNow does) and Transport.OnStateChange calling
// back into the host's breaker: Transport's hook is still told, the call
// back does not deadlock, and the breaker is whole.
func TestTransportHookRunsWhenSettingsHookExits(t *testing.T) {
	var each []string
	var tr *Transport
	tr = &Transport{
		Base: &statusBase{},
		Settings: Settings{
			FailureThreshold: 1,
			OnStateChange:    func(State, State, Counts) { runtime.Goexit() },
		},
		OnStateChange: func(host string, from, to State, _ Counts) {
			m := tr.Breaker(host).Metrics() // a call back
			each = append(each, host+": "+from.String()+">"+to.String()+" "+m.State.String())
		},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(t, tr, context.Background(), "http://a.test/503")
		t.Error("the goroutine went on after Settings.OnStateChange called runtime.Goexit")
	}()
	<-done
	require.Equal(t, []string{"a.test: closed>open open"}, each)
	b := tr.Breaker("a.test")
	require.Equal(t, Open, b.State())
	require.EqualValues(t, 1, b.Metrics().Total.Failures)
	require.False(t, b.delivering, "the breaker still thinks a change is being reported")
}
