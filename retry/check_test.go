package retry

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type closeCounter struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

// TestTransportCheck: Check tells at build time what RoundTrip would panic
// with, and RoundTrip's panic on a bad Policy closes the request's body, as a
// RoundTripper must for a request it does not send (it was left open).
func TestTransportCheck(t *testing.T) {
	require.NoError(t, (&Transport{}).Check(), "the zero Transport")
	for _, p := range []Policy{
		{MaxAttempts: -2},
		{InitialDelay: -time.Nanosecond},
		{MaxRetryAfter: -1},
		{Multiplier: 0.5},
		{Jitter: Jitter(99)},
	} {
		tr := &Transport{Policy: p}
		err := tr.Check()
		require.Error(t, err, "%+v", p)
		require.True(t, strings.HasPrefix(err.Error(), "retry: "), err.Error())

		body := &closeCounter{Reader: strings.NewReader("x")}
		req, rerr := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://a.test/", body)
		require.NoError(t, rerr)
		require.PanicsWithValue(t, err.Error(), func() { _, _ = tr.RoundTrip(req) })
		require.EqualValues(t, 1, body.closed.Load(), "the body of a request not sent was left open")
	}
}
