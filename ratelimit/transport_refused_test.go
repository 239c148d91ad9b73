package ratelimit

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTransportMalformedRequestTakesNothing: a request that net/http refuses
// to send (a header it cannot write) goes to Base, which refuses it, without
// taking a token or counting in a Tally: it took one, and a client's bug
// spent the quota of every good request behind it.
func TestTransportMalformedRequestTakesNothing(t *testing.T) {
	tb := NewTokenBucket(1, 1)
	var tally Tally
	tr := &Transport{
		Base:    rtFunc(func(*http.Request) (*http.Response, error) { return nil, http.ErrNotSupported }),
		Limiter: tally.Wrap(tb),
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://a.test/", nil)
	require.NoError(t, err)
	req.Header.Set("X-Bad", "a\r\nb")
	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, http.ErrNotSupported)
	require.True(t, tb.Allow(), "the malformed request took the token")
	require.Zero(t, tally.Counts(), "the malformed request was counted")
}
