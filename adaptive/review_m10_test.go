package adaptive_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReviewM10TransportCtxPanicAfterBase: since the request's ctx was
// cancelled with a cause counts as the caller giving up, RoundTrip looks at
// the ctx (callerGaveUp: ctx.Err, context.Cause) for every error of Base,
// and does so after it marked the Ticket finished. A caller's ctx is the
// caller's code: if it panics there, the panic goes on with the Ticket
// neither Done nor Ignored, and the Limiter counts the request in flight
// for ever; a few such and every later request is shed or waits. Right: a
// panic of the ctx leaves no Ticket held (finished as by Ignore, as for a
// panic of Base).
func TestReviewM10TransportCtxPanicAfterBase(t *testing.T) {
	l := adaptive.New(adaptive.Config{InitialLimit: 4})
	ctx := &testutil.ArmedCtx{Context: context.Background()}
	base := rtFunc(func(r *http.Request) (*http.Response, error) {
		ctx.Arm()
		return nil, errors.New("connection refused")
	})
	tr := &adaptive.Transport{Base: base, Limiter: l}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := testutil.PanicOf(func() { _, _ = tr.RoundTrip(req) })
	if p != testutil.ErrCtxPanic {
		t.Fatalf("RoundTrip panicked with %v, want the ctx's panic", p)
	}
	if n := l.InFlight(); n != 0 {
		t.Errorf("InFlight() = %d after RoundTrip's ctx panicked, want 0: the Ticket is kept", n)
	}
}

// TestReviewM10MiddlewareCtxPanicAfterHandler: Middleware too marks the
// Ticket finished before it looks at r's ctx (has the client gone away?);
// r's ctx is the code of whatever wraps Middleware (a middleware in front
// may give r a ctx of its own). If it panics there, the Ticket is kept for
// ever. Right: as for a handler's panic, the Ticket is finished as by
// Ignore and the panic goes on.
func TestReviewM10MiddlewareCtxPanicAfterHandler(t *testing.T) {
	l := adaptive.New(adaptive.Config{InitialLimit: 4})
	ctx := &testutil.ArmedCtx{Context: context.Background()}
	h := adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx.Arm()
	}))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := testutil.PanicOf(func() { h.ServeHTTP(discardWriter{}, req) })
	if p != testutil.ErrCtxPanic {
		t.Fatalf("ServeHTTP panicked with %v, want the ctx's panic", p)
	}
	if n := l.InFlight(); n != 0 {
		t.Errorf("InFlight() = %d after the request's ctx panicked, want 0: the Ticket is kept", n)
	}
}

type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}
