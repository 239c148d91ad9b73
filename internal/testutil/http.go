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

// countedBody is a request body that counts its Closes.
type countedBody struct {
	io.Reader
	closed atomic.Int32
}

func (b *countedBody) Close() error { b.closed.Add(1); return nil }

// CtxPanicClosesBody sends a PUT with a body through the RoundTripper that
// wrap makes over base, with a ctx that panics (ErrCtxPanic) at its at'th
// method call, for at from 1 until a call in which the ctx was never asked
// that often. Whether or not the panic reaches the caller, the body must
// be closed exactly once, as http.RoundTripper requires: by the
// RoundTripper if it did not hand the request to base, else by base (which
// closes it here, as net/http's does).
func CtxPanicClosesBody(t *testing.T, wrap func(base http.RoundTripper) http.RoundTripper) {
	t.Helper()
	for at := int32(1); ; at++ {
		if at > 100 {
			t.Fatal("the ctx was asked over 100 times in one call")
		}
		body := &countedBody{Reader: http.NoBody}
		var sent atomic.Bool
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sent.Store(true)
			if r.Body != nil {
				_ = r.Body.Close()
			}
			return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Body: http.NoBody, Request: r}, nil
		})
		ctx := &OnceCtx{Context: context.Background(), PanicAt: at}
		// A PUT that can be sent again (GetBody gives the same body, so that
		// every Close counts), which a retrying RoundTripper retries.
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://a.test/", body)
		if err != nil {
			t.Fatal(err)
		}
		req.GetBody = func() (io.ReadCloser, error) { return body, nil }
		var panicked any
		func() {
			defer func() { panicked = recover() }()
			if resp, err := wrap(base).RoundTrip(req); err == nil {
				_ = resp.Body.Close()
			}
		}()
		if panicked != nil && panicked != ErrCtxPanic {
			panic(panicked)
		}
		if n := body.closed.Load(); n != 1 {
			t.Errorf("the ctx panicked at its call %d (the panic reached the caller: %v; base sent it: %v): the body was closed %d times, want 1",
				at, panicked != nil, sent.Load(), n)
		}
		if ctx.calls.Load() < at {
			return // the ctx was never asked that often: every call is tried
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
