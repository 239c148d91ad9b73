package adaptive_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

// TestSeams15_TransportClockPanicsClosesTheResponse: the Limiter's Clock is
// read as Transport finishes the request's Ticket, after Base has answered.
// If it panics, the panic goes on to the caller, who never sees the
// response: its body must be closed, so that its connection is not kept,
// as breaker.Transport does when its Settings' code panics then. The slot is
// given back either way.
func TestSeams15_TransportClockPanicsClosesTheResponse(t *testing.T) {
	for _, status := range []int{200, 503} {
		var reads atomic.Int64
		cfg := fixed(1, adaptive.NoWait)
		cfg.Clock = func() time.Duration {
			if reads.Add(1) > 1 { // the read at Acquire goes through; the one at Done panics
				panic("clock")
			}
			return 0
		}
		l := adaptive.New(cfg)
		body := &closeTracker{Reader: strings.NewReader("answer")}
		tr := &adaptive.Transport{Limiter: l, Base: rtFunc(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: status, Body: body}, nil
		})}
		req := httptest.NewRequest("GET", "http://x/", nil)
		req.RequestURI = ""
		mustPanic(t, "clock", func() { _, _ = tr.RoundTrip(req) })
		if reads.Load() < 2 {
			t.Fatalf("status %d: the Clock was read %d times; the Ticket was not timed", status, reads.Load())
		}
		if !body.closed {
			t.Errorf("status %d: the response nobody sees kept its body open", status)
		}
		if n := l.InFlight(); n != 0 {
			t.Errorf("status %d: InFlight %d after the panic, want 0", status, n)
		}
	}
	// Base's error: no response to close, the slot is given back.
	var reads atomic.Int64
	cfg := fixed(1, adaptive.NoWait)
	cfg.Clock = func() time.Duration {
		if reads.Add(1) > 1 {
			panic("clock")
		}
		return 0
	}
	l := adaptive.New(cfg)
	tr := &adaptive.Transport{Limiter: l, Base: rtFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("refused")
	})}
	req := httptest.NewRequest("GET", "http://x/", nil)
	req.RequestURI = ""
	mustPanic(t, "clock", func() { _, _ = tr.RoundTrip(req) })
	if n := l.InFlight(); n != 0 {
		t.Errorf("Base failed: InFlight %d after the panic, want 0", n)
	}
}
