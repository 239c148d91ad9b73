package adaptive_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/adaptive"
)

// rv15cBody notes whether it was closed.
type rv15cBody struct {
	io.Reader
	closed bool
}

func (b *rv15cBody) Close() error { b.closed = true; return nil }

// TestRV15cNoLimiterClosesBody: RoundTrip of a Transport with no Limiter, or
// one not made by New, panics with Check's message and closes the request's
// body, as a RoundTripper must: it left the body open.
func TestRV15cNoLimiterClosesBody(t *testing.T) {
	for _, tr := range []*adaptive.Transport{{}, {Limiter: &adaptive.Limiter{}}} {
		body := &rv15cBody{Reader: strings.NewReader("x")}
		req, err := http.NewRequest(http.MethodPost, "http://h.example/", body)
		require.NoError(t, err)
		require.PanicsWithValue(t, tr.Check().Error(), func() { _, _ = tr.RoundTrip(req) })
		require.True(t, body.closed)
	}
}
