package testutil

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// LoopbackServer starts a server on loopback (HTTP/2 over TLS if h2) that
// answers every request with 200 and counts the requests it gets, and a
// fresh http.Transport for it; both end with the test.
func LoopbackServer(t testing.TB, h2 bool) (*httptest.Server, *http.Transport, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if h2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	tr := srv.Client().Transport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return srv, tr, &hits
}

// Send sends r through rt, drains and closes the response, and returns its
// status, or the error of a request that was not sent. The send is bounded
// (not a timing assertion: a request neither sent nor refused must not hold
// the test), and the test fails if the bound is what ended it.
func Send(t testing.TB, rt http.RoundTripper, r *http.Request) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := rt.RoundTrip(r.WithContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			t.Fatalf("the request was neither sent nor refused: %v", err)
		}
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
