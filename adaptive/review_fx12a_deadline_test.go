package adaptive_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

// statusRecorder records the status a handler sends, 0 if none: a
// ResponseRecorder says 200 then, which is what net/http would send.
type statusRecorder struct {
	*httptest.ResponseRecorder
	sent int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.sent == 0 {
		w.sent = code
	}
	w.ResponseRecorder.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.sent == 0 {
		w.sent = http.StatusOK
	}
	return w.ResponseRecorder.Write(b)
}

// Regression: a request whose ctx's deadline passed while it waited for a
// Ticket (a timeout middleware in front, a MaxWait longer than the deadline)
// was answered with nothing written, as one whose client had gone; but its
// client is still there, and net/http ends such a response with its
// default, 200 and no body: a request that was never served reads as a
// success. ratelimit.Middleware behind, for the same end of a wait (its
// decision's), answers 503. Right: a request whose wait ends by its
// deadline is answered 503 Service Unavailable, as a shed one; one whose ctx
// was cancelled (net/http's sign that the client has gone) still gets
// nothing.
func TestMiddlewareDeadlineWhileWaitingIsAnswered(t *testing.T) {
	for _, tc := range []struct {
		name   string
		end    func(context.Context) (context.Context, context.CancelFunc)
		status int
	}{
		{"deadline", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, time.Second)
		}, http.StatusServiceUnavailable},
		{"cancelled", func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(time.Second, cancel)
			return ctx, cancel
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := adaptive.New(fixed(1, time.Hour))
				held, err := l.Acquire(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				handled := false
				h := adaptive.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled = true }))
				ctx, cancel := tc.end(context.Background())
				defer cancel()
				w := &statusRecorder{ResponseRecorder: httptest.NewRecorder()}
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
				if handled {
					t.Fatal("the handler ran for a request that got no Ticket")
				}
				if w.sent != tc.status {
					t.Fatalf("status sent %d, want %d (0: nothing written, and net/http sends 200)", w.sent, tc.status)
				}
				held.Done(nil)
				if l.InFlight() != 0 || l.Waiting() != 0 {
					t.Fatalf("InFlight %d Waiting %d, want 0 0", l.InFlight(), l.Waiting())
				}
			})
		})
	}
}
