package adaptive_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

// hijackRecorder is a ResponseRecorder whose connection can be taken over,
// as a net/http server's HTTP/1 writer can.
type hijackRecorder struct {
	*httptest.ResponseRecorder
	hijacked bool
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h.hijacked = true
	c1, c2 := net.Pipe()
	c2.Close()
	return c1, bufio.NewReadWriter(bufio.NewReader(c1), bufio.NewWriter(c1)), nil
}

// TestMiddlewareWriterFlushes: a handler that streams (server-sent events,
// a long download) asserts http.Flusher on its writer, as net/http's own
// writer has it; behind Middleware, the assertion failed and the handler
// could not stream.
func TestMiddlewareWriterFlushes(t *testing.T) {
	l := adaptive.New(adaptive.Config{})
	flushed := false
	h := adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := w.(http.Flusher)
		if !ok {
			t.Error("Middleware's writer is not an http.Flusher")
			return
		}
		_, _ = w.Write([]byte("event: 1\n\n"))
		f.Flush()
		flushed = true
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("ResponseController.Flush() = %v", err)
		}
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if flushed && !rec.Flushed {
		t.Error("Flush did not reach the writer underneath")
	}
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d, want 0", l.InFlight())
	}
}

// TestMiddlewareHijackedIgnored: a handler that takes the connection over
// (a WebSocket) asserts http.Hijacker, which failed behind Middleware; and
// through http.ResponseController, which reached it, the connection's whole
// life (minutes of a WebSocket) counted as the latency of one call, and
// the limit fell for a service that answered everything at once. A
// hijacked connection's time says nothing of the service: its Ticket is
// ignored.
func TestMiddlewareHijackedIgnored(t *testing.T) {
	for _, via := range []string{"assertion", "ResponseController"} {
		t.Run(via, func(t *testing.T) {
			var now atomic.Int64
			l := adaptive.New(adaptive.Config{Clock: func() time.Duration { return time.Duration(now.Load()) }})
			h := adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/quick" {
					now.Add(int64(time.Millisecond))
					return
				}
				var err error
				if via == "assertion" {
					hj, ok := w.(http.Hijacker)
					if !ok {
						t.Error("Middleware's writer is not an http.Hijacker")
						return
					}
					_, _, err = hj.Hijack()
				} else {
					_, _, err = http.NewResponseController(w).Hijack()
				}
				if err != nil {
					t.Errorf("Hijack() = %v", err)
					return
				}
				now.Add(int64(10 * time.Minute)) // the WebSocket's life
			}))
			for range 300 {
				h.ServeHTTP(&hijackRecorder{ResponseRecorder: httptest.NewRecorder()}, httptest.NewRequest("GET", "/quick", nil))
			}
			before, limit := l.Latency(), l.Limit()
			for range 300 {
				rec := &hijackRecorder{ResponseRecorder: httptest.NewRecorder()}
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/ws", nil))
				if !rec.hijacked {
					t.Fatal("the connection was not hijacked")
				}
			}
			for range 300 {
				h.ServeHTTP(&hijackRecorder{ResponseRecorder: httptest.NewRecorder()}, httptest.NewRequest("GET", "/quick", nil))
			}
			if got := l.Latency(); got > 2*before {
				t.Errorf("Latency() = %v after hijacked connections, was %v: their life counted as latency", got, before)
			}
			if got := l.Limit(); got < limit {
				t.Errorf("Limit() = %d after hijacked connections, was %d: their life counted as latency", got, limit)
			}
			if l.InFlight() != 0 {
				t.Fatalf("InFlight %d, want 0", l.InFlight())
			}
		})
	}
}
