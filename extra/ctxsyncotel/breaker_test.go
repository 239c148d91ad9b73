package ctxsyncotel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

func outcome(o string) attribute.KeyValue { return ctxsyncotel.BreakerOutcomeKey.String(o) }
func state(s string) attribute.KeyValue   { return ctxsyncotel.BreakerStateKey.String(s) }

var breakerName = ctxsyncotel.BreakerNameKey.String("payments")

// TestBreakerMetrics: a success of 10ms, a failure of 20ms that opens the
// breaker, a refusal, and, once the open time is up, a half-open trial of
// 30ms that succeeds; the state is read at each step.
func TestBreakerMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, mp := newProvider(t)
		m, err := ctxsyncotel.NewBreakerMetrics("payments", mp)
		if err != nil {
			t.Fatal(err)
		}
		var mine []breaker.Outcome
		var changes []breaker.State
		b := breaker.New(breaker.Settings{
			Name:             "payments",
			FailureThreshold: 1,
			OpenTimeout:      time.Second,
			OnCall:           m.OnCall(func(e breaker.CallEvent) { mine = append(mine, e.Outcome) }),
			OnStateChange: m.OnStateChange(func(_, to breaker.State, _ breaker.Counts) {
				changes = append(changes, to)
			}),
		})
		reg, err := m.Observe(b)
		if err != nil {
			t.Fatal(err)
		}
		defer reg.Unregister()
		call := func(d time.Duration, err error) error {
			return b.Execute(context.Background(), func(context.Context) error {
				time.Sleep(d)
				return err
			})
		}
		checkState := func(want string) {
			t.Helper()
			c := collect(t, r)
			for _, st := range []string{"closed", "open", "half-open"} {
				w := int64(0)
				if st == want {
					w = 1
				}
				if got := c.point(t, "ctxsync.breaker.state", breakerName, state(st)); got != w {
					t.Errorf("ctxsync.breaker.state{%s} = %d, want %d", st, got, w)
				}
			}
		}
		checkState("closed")
		if err := call(10*time.Millisecond, nil); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		if err := call(20*time.Millisecond, boom); err != boom {
			t.Fatalf("failing call = %v, want %v", err, boom)
		}
		checkState("open")
		if err := call(0, nil); !errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("call to an open breaker = %v, want ErrOpen", err)
		}
		time.Sleep(time.Second)
		checkState("half-open")
		if err := call(30*time.Millisecond, nil); err != nil {
			t.Fatal(err)
		}
		checkState("closed")

		c := collect(t, r)
		c.checkKinds(t, map[string]struct {
			kind kind
			unit string
		}{
			"ctxsync.breaker.calls":         {counter, "{call}"},
			"ctxsync.breaker.call.duration": {histogram, "s"},
			"ctxsync.breaker.state":         {gauge, "1"},
			"ctxsync.breaker.state_changes": {counter, "{change}"},
		})
		for _, w := range []struct {
			outcome string
			calls   int64
			seconds float64
		}{
			{"success", 2, 0.04},
			{"failure", 1, 0.02},
			{"ignored", 0, 0},
			{"rejected", 1, 0},
		} {
			kvs := []attribute.KeyValue{breakerName, outcome(w.outcome)}
			if got := c.point(t, "ctxsync.breaker.calls", kvs...); got != w.calls {
				t.Errorf("calls{%s} = %d, want %d", w.outcome, got, w.calls)
			}
			h := c.hist(t, "ctxsync.breaker.call.duration", kvs...)
			wantCount := uint64(w.calls)
			if w.outcome == "rejected" {
				wantCount = 0 // refusals take no time, and are not recorded
			}
			if h.Count != wantCount || !near(h.Sum, w.seconds) {
				t.Errorf("call.duration{%s}: count %d sum %v, want %d and %v", w.outcome, h.Count, h.Sum, wantCount, w.seconds)
			}
		}
		for _, w := range []struct {
			state string
			n     int64
		}{{"open", 1}, {"half-open", 1}, {"closed", 1}} {
			if got := c.point(t, "ctxsync.breaker.state_changes", breakerName, state(w.state)); got != w.n {
				t.Errorf("state_changes{%s} = %d, want %d", w.state, got, w.n)
			}
		}
		if len(changes) != 3 {
			t.Errorf("the user's OnStateChange saw %v, want 3 changes", changes)
		}
		want := []breaker.Outcome{breaker.Success, breaker.Failure, breaker.Rejected, breaker.Success}
		if len(mine) != len(want) {
			t.Fatalf("the user's OnCall saw %v, want %v", mine, want)
		}
		for i := range want {
			if mine[i] != want[i] {
				t.Fatalf("the user's OnCall saw %v, want %v", mine, want)
			}
		}
	})
}

// TestBreakerMetricsOutOfRange: an event whose outcome or state no
// breaker makes today is recorded under "other", not dropped, and does not
// index out of range.
func TestBreakerMetricsOutOfRange(t *testing.T) {
	r, mp := newProvider(t)
	m, err := ctxsyncotel.NewBreakerMetrics("payments", mp)
	if err != nil {
		t.Fatal(err)
	}
	on := m.OnCall(nil)
	on(breaker.CallEvent{Outcome: 0, State: breaker.Closed})
	on(breaker.CallEvent{Outcome: breaker.Outcome(9), State: breaker.State(7)})
	on(breaker.CallEvent{Outcome: breaker.Outcome(-1), State: breaker.State(-1)})
	change := m.OnStateChange(nil)
	change(breaker.Closed, breaker.State(3), breaker.Counts{})
	change(breaker.Closed, breaker.State(-1), breaker.Counts{})
	c := collect(t, r)
	if got := c.hist(t, "ctxsync.breaker.call.duration", outcome("other")).Count; got != 3 {
		t.Errorf("call.duration{other} count = %d, want 3", got)
	}
	if got := c.point(t, "ctxsync.breaker.state_changes", state("other")); got != 2 {
		t.Errorf("state_changes{other} = %d, want 2", got)
	}
}

func breakerNameOf(n string) attribute.KeyValue { return ctxsyncotel.BreakerNameKey.String(n) }
