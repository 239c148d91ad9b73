package ratelimit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// ownWaitKeyed is a PerHost of the user's that embeds a *Keyed and waits
// through a WaitN of its own, so that Transport cannot take it for the Keyed.
type ownWaitKeyed struct {
	*Keyed[string, Taker]
}

func (o ownWaitKeyed) WaitN(ctx context.Context, key string, n int) error {
	return o.Keyed.WaitN(ctx, key, n)
}

// TestTransportDeadlineRefusalCountedOnce: a request refused for a deadline
// too close is one decision, a failed wait, when PerHost is a type of the
// user's embedding a *Keyed whose limiters a Tally counts: the Take that told
// the delay counted a refusal as well. (A type of the user's that holds a
// counted limiter in a field of an interface type hides it: its Take, which
// Transport calls to learn the delay, is the user's to count or not.)
func TestTransportDeadlineRefusalCountedOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		tr   func(*Tally, *sentLog) *Transport
	}{
		{"PerHost", func(tally *Tally, base *sentLog) *Transport {
			return &Transport{Base: base, PerHost: ownWaitKeyed{NewKeyed(func(string) Taker {
				return tally.Wrap(NewTokenBucket(1, 1))
			}, KeyedConfig{})}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var tally Tally
				tr := c.tr(&tally, newSentLog())
				_, _, err := roundTrip(t, tr, context.Background(), "http://a.test/")
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				_, _, err = roundTrip(t, tr, ctx, "http://a.test/")
				var de *DeadlineError
				require.ErrorAs(t, err, &de)
				require.Equal(t, TallyCounts{Waited: 1, WaitFailed: 1}, tally.Counts())
			})
		})
	}
}
