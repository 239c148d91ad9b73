package ratelimit

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// onWaitLog is an OnWait that records what it is told, in order.
type onWaitLog []string

func (l *onWaitLog) hook(d time.Duration, err error) {
	s := d.String()
	if err != nil {
		s += " error"
	}
	*l = append(*l, s)
}

// TestTransportTallyNoPhantomDecisions: a Tally around the limiters of a
// Transport counts each request once, as one wait, whichever way the Transport
// got its events. Per host, it tried AllowN before WaitN: three requests to
// one host, none refused, two of them waiting, read {Allowed 1, Refused 2,
// Waited 2}, and a metric of refusals read 2.
func TestTransportTallyNoPhantomDecisions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits onWaitLog
		tally := &Tally{OnWait: waits.hook}
		perHost := NewKeyed(func(string) Taker { return tally.Wrap(NewTokenBucket(10, 1)) }, KeyedConfig{})
		base := newSentLog()
		tr := &Transport{Base: base, PerHost: perHost}
		for range 3 {
			_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
			require.NoError(t, err)
		}
		require.Equal(t, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}, base.sent())
		require.Equal(t, TallyCounts{Waited: 3}, tally.Counts())
		require.Equal(t, onWaitLog{"0s", "100ms", "100ms"}, waits)
	})
}

// TestTransportTallyDeadlineCountedOnce: a request refused because its
// deadline is too close counts as one failed wait; the Take that tells the
// Transport how long the wait would be is no decision of its own. It counted
// as a refusal besides, on the global path and per host.
func TestTransportTallyDeadlineCountedOnce(t *testing.T) {
	for _, perHost := range []bool{false, true} {
		t.Run(fmt.Sprintf("perHost=%v", perHost), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var waits onWaitLog
				tally := &Tally{OnWait: waits.hook}
				tr := &Transport{Base: newSentLog()}
				if perHost {
					tr.PerHost = NewKeyed(func(string) Taker { return tally.Wrap(NewTokenBucket(1, 1)) }, KeyedConfig{})
				} else {
					tr.Limiter = tally.Wrap(NewTokenBucket(1, 1))
				}
				_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				_, _, err = roundTrip(t, tr, ctx, "http://a.test/")
				var de *DeadlineError
				require.ErrorAs(t, err, &de)
				require.Equal(t, time.Second, de.Delay)
				require.Equal(t, TallyCounts{Waited: 1, WaitFailed: 1}, tally.Counts())
				require.Equal(t, onWaitLog{"0s", "0s error"}, waits)
			})
		})
	}
}

// TestTransportTallyTakeAllowsAfterRefusal: a request whose WaitN was refused
// for its deadline, but whose Take then allowed the events (a waiter ahead
// gave up), is sent, and counts as one wait that took its events: not as a
// failed wait and an allowed decision.
func TestTransportTallyTakeAllowsAfterRefusal(t *testing.T) {
	var waits onWaitLog
	tally := &Tally{OnWait: waits.hook}
	base := newSentLog()
	tr := &Transport{Base: base, Limiter: tally.Wrap(&fakeLimiter{waitErr: ErrWouldExceedDeadline, take: Decision{Allowed: true}})}
	_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
	require.NoError(t, err)
	require.Len(t, base.sent(), 1)
	require.Equal(t, TallyCounts{Waited: 1}, tally.Counts())
	require.Len(t, waits, 1)
}

// TestTransportTallyAroundKeyedHandle: a Tally around the handle of one key
// of a Keyed whose limiters have a Tally of their own: each counts the
// request refused for its deadline once.
func TestTransportTallyAroundKeyedHandle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inner, outer Tally
		k := NewKeyed(func(string) Taker { return inner.Wrap(NewTokenBucket(1, 1)) }, KeyedConfig{})
		tr := &Transport{Base: newSentLog(), Limiter: outer.Wrap(k.Limiter("shared"))}
		_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, _, err = roundTrip(t, tr, ctx, "http://a.test/")
		var de *DeadlineError
		require.ErrorAs(t, err, &de)
		require.Equal(t, time.Second, de.Delay)
		want := TallyCounts{Waited: 1, WaitFailed: 1}
		require.Equal(t, want, outer.Counts(), "outer")
		require.Equal(t, want, inner.Counts(), "inner")
	})
}

// ownKeyed is a user's KeyWaiter that embeds a *Keyed and waits its own way.
type ownKeyed struct {
	*Keyed[string, *TokenBucket]
	waits int
}

func (o *ownKeyed) WaitN(ctx context.Context, key string, n int) error {
	o.waits++
	return o.Keyed.WaitN(ctx, key, n)
}

// TestTransportPerHostEmbeddedKeyed: a PerHost whose type embeds a *Keyed
// gets the Keyed's unexported methods too; Transport still waits through the
// type's own WaitN.
func TestTransportPerHostEmbeddedKeyed(t *testing.T) {
	o := &ownKeyed{Keyed: NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1, 5) }, KeyedConfig{})}
	tr := &Transport{Base: newSentLog(), PerHost: o}
	for range 2 {
		_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
		require.NoError(t, err)
	}
	require.Equal(t, 2, o.waits)
}

// TestTransportPerHostNoOvertaking: a request to a host whose limiter has
// waiters queues behind them, though the events it asks for come back before
// theirs would: the Keyed's quick try refuses while others wait.
func TestTransportPerHostNoOvertaking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSentLog()
		tr := &Transport{Base: base, PerHost: NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1, 2) }, KeyedConfig{}),
			Cost: func(r *http.Request) int { return len(r.URL.Path) - 1 }}
		_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/xx") // takes both
		require.NoError(t, err)
		waited := make(chan error)
		go func() {
			_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/yy") // waits 2s
			waited <- err
		}()
		synctest.Wait()
		time.Sleep(time.Second) // one event back: the newcomer's, were it let past
		_, _, err = roundTrip(t, tr, context.Background(), "http://a.test/z")
		require.NoError(t, err)
		require.NoError(t, <-waited)
		require.Equal(t, []time.Duration{0, 2 * time.Second, 3 * time.Second}, base.sent())
	})
}
