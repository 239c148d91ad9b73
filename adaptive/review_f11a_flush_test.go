package adaptive_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

// TestMiddlewareFlushedStatusIsSent: once a handler has flushed (or
// written), net/http has sent 200 and ignores a later WriteHeader(503),
// which is only a "superfluous WriteHeader" in its log. Middleware's writer
// still noted the 503, and counted a call its client saw succeed as an
// overload, driving the limit down for a service that answered everything
// quickly. The status that counts is the one sent: the first of
// WriteHeader, Write, Flush.
func TestMiddlewareFlushedStatusIsSent(t *testing.T) {
	for _, first := range []string{"Flush", "ResponseController.Flush", "Write"} {
		t.Run(first, func(t *testing.T) {
			var now atomic.Int64
			l := adaptive.New(adaptive.Config{Clock: func() time.Duration { return time.Duration(now.Load()) }})
			h := adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				now.Add(int64(time.Millisecond))
				switch first {
				case "Flush":
					w.(http.Flusher).Flush()
				case "ResponseController.Flush":
					_ = http.NewResponseController(w).Flush()
				case "Write":
					_, _ = w.Write([]byte("partial"))
				}
				w.WriteHeader(http.StatusServiceUnavailable) // too late: 200 is sent
			}))
			limit := l.Limit()
			for range 300 {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
				if rec.Code != http.StatusOK {
					t.Fatalf("the client got %d, want 200 (the test's premise)", rec.Code)
				}
			}
			if got := l.Limit(); got < limit {
				t.Errorf("Limit() = %d after 300 quick calls answered 200, was %d: a WriteHeader(503) net/http ignored counted as overload", got, limit)
			}
		})
	}
}
