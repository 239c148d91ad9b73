package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/internal/golden"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOutput runs the example in virtual time against a real (loopback)
// server and compares its output with testdata/output.golden; run it with
// -update to accept a change.
//
// The server starts outside the synctest bubble: a bubble's clock moves only
// when every goroutine in it is blocked on something in the bubble, and the
// server's goroutines block on the network. For the same reason the client
// keeps no idle connection, whose reading goroutine would block on the
// network between requests: each request takes a connection of its own. The
// server decides by the count of its requests, not by time, so its being
// outside the bubble changes nothing.
func TestOutput(t *testing.T) {
	srv := httptest.NewServer(flakyServer())
	defer srv.Close()
	synctest.Test(t, func(t *testing.T) {
		conns := &http.Transport{DisableKeepAlives: true}
		defer conns.CloseIdleConnections()
		var out bytes.Buffer
		run(&out, srv.URL, conns)
		golden.Check(t, "output", out.Bytes())
	})
}
