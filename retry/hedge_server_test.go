package retry_test

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/retry"
)

// Through a real http.Transport to a loopback server whose first request
// stalls until its client gives up on it: the copy's answer is returned,
// and the stalled request is cancelled on the server's side too, over
// HTTP/1.1 and HTTP/2.
func TestTransportHedgeLoopback(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		var n atomic.Int32
		cancelled := make(chan struct{})
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) == 1 {
				<-r.Context().Done() // the client cancelled the loser
				close(cancelled)
				return
			}
			_, _ = io.WriteString(w, "copy")
		}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		if h2 {
			srv.EnableHTTP2 = true
			srv.StartTLS()
		} else {
			srv.Start()
		}
		base := srv.Client().Transport.(*http.Transport).Clone()
		tr := &retry.Transport{Base: base, Hedge: &retry.Hedge{Delay: time.Millisecond, Budget: plenty()}}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err, "h2 %v", h2)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, "copy", string(body))
		require.NoError(t, resp.Body.Close())
		<-cancelled // not a timing assertion: the test's own deadline bounds it
		base.CloseIdleConnections()
		srv.Close()
	}
}
