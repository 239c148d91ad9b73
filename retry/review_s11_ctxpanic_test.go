package retry_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/retry"
)

// TestTransportCtxPanicClosesBody: the request's ctx is the caller's code;
// wherever it panics, the body of the request is closed once.
func TestTransportCtxPanicClosesBody(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		testutil.CtxPanicClosesBody(t, func(base http.RoundTripper) http.RoundTripper {
			return &retry.Transport{Base: base}
		})
	})
	t.Run("AttemptTimeout", func(t *testing.T) {
		testutil.CtxPanicClosesBody(t, func(base http.RoundTripper) http.RoundTripper {
			return &retry.Transport{Base: base, Policy: retry.Policy{AttemptTimeout: time.Minute}}
		})
	})
	t.Run("Hedge", func(t *testing.T) {
		testutil.CtxPanicClosesBody(t, func(base http.RoundTripper) http.RoundTripper {
			return &retry.Transport{Base: base, Hedge: &retry.Hedge{Delay: time.Minute, Budget: retry.NewBudget(0.1, 10)}}
		})
	})
	t.Run("over a breaker", func(t *testing.T) {
		testutil.CtxPanicClosesBody(t, func(base http.RoundTripper) http.RoundTripper {
			return &retry.Transport{Base: &breaker.Transport{Base: base}}
		})
	})
}
