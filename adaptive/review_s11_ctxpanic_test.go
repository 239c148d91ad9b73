package adaptive_test

import (
	"net/http"
	"testing"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestTransportCtxPanicClosesBody: the request's ctx is the caller's code.
// One that panicked in Limiter.Acquire's look at it, or in a breaker's
// Precheck behind, left the body of a request never sent open.
func TestTransportCtxPanicClosesBody(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		testutil.CtxPanicClosesBody(t, func(base http.RoundTripper) http.RoundTripper {
			return &adaptive.Transport{Base: base, Limiter: adaptive.New(adaptive.Config{})}
		})
	})
	t.Run("over a breaker", func(t *testing.T) {
		testutil.CtxPanicClosesBody(t, func(base http.RoundTripper) http.RoundTripper {
			return &adaptive.Transport{Base: &breaker.Transport{Base: base}, Limiter: adaptive.New(adaptive.Config{})}
		})
	})
}
