package adaptive_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

// Regression: net/http sends 101 Switching Protocols as a final status (the
// one 1xx that is: a later WriteHeader is superfluous, and ignored), but
// Middleware's writer noted only statuses of 200 and above, so a
// WriteHeader(503) after a 101, which the client never got, counted as an
// overload and drove the limit down; and the connection's life under the
// new protocol (as a hijacked one's) counted as a call's latency. Right:
// the status noted is the one sent, 101, and the Ticket of a request that
// switched protocols is ignored, as a hijacked one's is.
func TestMiddlewareSwitchingProtocolsIsSent(t *testing.T) {
	var now atomic.Int64
	l := adaptive.New(adaptive.Config{Clock: func() time.Duration { return time.Duration(now.Load()) }})
	h := adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quick" {
			now.Add(int64(time.Millisecond))
			return
		}
		w.WriteHeader(http.StatusSwitchingProtocols)
		now.Add(int64(10 * time.Minute))             // the new protocol's life
		w.WriteHeader(http.StatusServiceUnavailable) // too late: 101 is sent
	}))
	for range 300 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/quick", nil))
	}
	before, limit := l.Latency(), l.Limit()
	for range 300 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/upgrade", nil))
		if rec.Code != http.StatusSwitchingProtocols {
			t.Fatalf("the client got %d, want 101 (the test's premise)", rec.Code)
		}
	}
	for range 300 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/quick", nil))
	}
	if got := l.Limit(); got < limit {
		t.Errorf("Limit() = %d after 300 requests that switched protocols, was %d", got, limit)
	}
	if got := l.Latency(); got > 2*before {
		t.Errorf("Latency() = %v after requests that switched protocols, was %v: their life counted as latency", got, before)
	}
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d, want 0", l.InFlight())
	}
}
