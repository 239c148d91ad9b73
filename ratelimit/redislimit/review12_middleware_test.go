package redislimit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// Regression: ratelimit.Middleware decided with Take, which asks Redis with
// no ctx of the caller's: a request whose client had gone (or whose ctx's
// deadline passed) still waited for Redis up to the Timeout, held its
// handler's goroutine meanwhile, and then was served (or refused) for
// nobody. Middleware asks with the request's ctx (the Limiter's
// TakeContext); a request whose ctx ends first gets no body and no
// rate-limit headers (503 Service Unavailable if its deadline passed,
// nothing at all if it was cancelled: its client has gone), calls neither
// the handler nor OnLimited, and counts as no failure of Redis (Failures,
// OnError): it was neither allowed nor refused.
func TestReview12MiddlewareGivesUpWithTheRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int                                                 // 0: nothing written
		end  func(ctx context.Context) (context.Context, func()) // the request's ctx, and what ends it
	}{
		{"cancelled", 0, func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancel(ctx)
			return ctx, cancel
		}},
		{"deadline", http.StatusServiceUnavailable, func(ctx context.Context) (context.Context, func()) {
			// The deadline passes while the round trip is held, whenever
			// that is: nothing here waits for it to be on time.
			ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			t.Cleanup(cancel)
			return ctx, func() {}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := backends(t)[0].client(t)
			g := newGate(c)
			var reported, handled, limited atomic.Int32
			l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 5, Timeout: time.Hour,
				OnError: func(string, error) { reported.Add(1) }})
			mw := ratelimit.Middleware(l, ratelimit.MiddlewareConfig{
				Key:       func(*http.Request) string { return "k" },
				OnLimited: func(http.ResponseWriter, *http.Request, ratelimit.Decision) { limited.Add(1) },
			})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled.Add(1) }))

			ctx, end := tc.end(context.Background())
			r := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
			w := &wroteWriter{ResponseRecorder: httptest.NewRecorder()}
			served := make(chan struct{})
			go func() {
				defer close(served)
				mw.ServeHTTP(w, r)
			}()
			require.Eventually(t, func() bool { return g.heldRuns() == 1 }, 10*time.Second, time.Millisecond,
				"the round trip never reached Redis")
			end()
			select {
			case <-served:
			case <-time.After(10 * time.Second): // a bound on a failure, not a timing
				close(g.open)
				<-served
				t.Fatalf("the Middleware waited for Redis after the request's ctx ended; then answered %d", w.Code)
			}
			close(g.open)
			require.Equal(t, tc.code, w.wrote, "the status written")
			require.Empty(t, w.Body.String())
			require.Empty(t, w.Header().Get("RateLimit-Policy"), "rate-limit headers of no decision")
			require.Zero(t, handled.Load(), "the handler ran")
			require.Zero(t, limited.Load(), "OnLimited ran: counted as a refusal")
			require.Zero(t, l.Failures(), "counted as a failure of Redis")
			require.Zero(t, reported.Load(), "told to OnError")
		})
	}

	// A request whose ctx is done before it comes asks nothing of Redis.
	c := backends(t)[0].client(t)
	g := newGate(c)
	l := newLimiter(t, Config{Client: c, Rate: 1, Burst: 5})
	mw := ratelimit.Middleware(l, ratelimit.MiddlewareConfig{})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the handler ran")
	}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := &wroteWriter{ResponseRecorder: httptest.NewRecorder()}
	mw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	require.Zero(t, w.wrote, "a request cancelled before it came was answered")
	require.Zero(t, g.heldRuns(), "a done request asked Redis")
}

// wroteWriter records the status a handler wrote, 0 if none (a
// ResponseRecorder's Code says 200 then).
type wroteWriter struct {
	*httptest.ResponseRecorder
	wrote int
}

func (w *wroteWriter) WriteHeader(code int) {
	if w.wrote == 0 {
		w.wrote = code
	}
	w.ResponseRecorder.WriteHeader(code)
}

func (w *wroteWriter) Write(b []byte) (int, error) {
	if w.wrote == 0 {
		w.wrote = http.StatusOK
	}
	return w.ResponseRecorder.Write(b)
}
