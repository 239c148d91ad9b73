package ratelimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// ctxTaker is a KeyTaker with TakeContext, as redislimit's Limiter: it
// answers d and err, and records the ctx it was given. Its Take must not be
// called when TakeContext is there.
type ctxTaker struct {
	t   *testing.T
	d   ratelimit.Decision
	err error
	ctx context.Context
}

func (c *ctxTaker) Take(string, int) ratelimit.Decision {
	c.t.Error("Take called; the Middleware has TakeContext")
	return c.d
}

func (c *ctxTaker) TakeContext(ctx context.Context, _ string, _ int) (ratelimit.Decision, error) {
	c.ctx = ctx
	return c.d, c.err
}

// Middleware decides with TakeContext and the request's ctx when the limiter
// has it. An error with no Decision (the request's ctx ended first) is no
// decision: no body, no rate-limit headers, neither the handler nor
// OnLimited; 503 if the deadline passed, nothing written at all if the ctx
// was cancelled (the client has gone). An error with a Decision (a
// Policy's, while a store failed) is answered by the Decision.
func TestReview12MiddlewareTakeContext(t *testing.T) {
	type ctxKey struct{}
	for _, tc := range []struct {
		name              string
		d                 ratelimit.Decision
		err               error
		code              int
		handled, refusals int
	}{
		{"ctx ended", ratelimit.Decision{}, context.Canceled, 0, 0, 0},
		{"deadline", ratelimit.Decision{}, context.DeadlineExceeded, http.StatusServiceUnavailable, 0, 0},
		{"no decision", ratelimit.Decision{}, errors.New("store down"), http.StatusServiceUnavailable, 0, 0},
		{"policy allows", ratelimit.Decision{Allowed: true, Limit: 3, Remaining: ratelimit.Unknown}, errors.New("store down"), http.StatusOK, 1, 0},
		{"policy refuses", ratelimit.Decision{Limit: 3, RetryAfter: 1}, errors.New("store down"), http.StatusTooManyRequests, 0, 1},
		{"allowed", ratelimit.Decision{Allowed: true, Limit: 3, Remaining: 2}, nil, http.StatusOK, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := &ctxTaker{t: t, d: tc.d, err: tc.err}
			handled, refusals := 0, 0
			mw := ratelimit.Middleware(lim, ratelimit.MiddlewareConfig{
				OnLimited: func(w http.ResponseWriter, _ *http.Request, _ ratelimit.Decision) {
					refusals++
					w.WriteHeader(http.StatusTooManyRequests)
				},
			})(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { handled++; w.WriteHeader(http.StatusOK) }))
			ctx := context.WithValue(context.Background(), ctxKey{}, "the request's")
			switch tc.err {
			case context.Canceled:
				c, cancel := context.WithCancel(ctx)
				cancel()
				ctx = c
			case context.DeadlineExceeded:
				c, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
				defer cancel()
				ctx = c
			}
			w := &codeWriter{ResponseRecorder: httptest.NewRecorder()}
			mw.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
			if w.Code != tc.code || handled != tc.handled || refusals != tc.refusals {
				t.Fatalf("code %d, handled %d, refused %d; want %d, %d, %d", w.Code, handled, refusals, tc.code, tc.handled, tc.refusals)
			}
			if lim.ctx == nil || lim.ctx.Value(ctxKey{}) != "the request's" {
				t.Fatalf("TakeContext was not given the request's ctx")
			}
			if tc.code == http.StatusServiceUnavailable || tc.code == 0 {
				if w.Body.Len() != 0 || w.Header().Get("RateLimit-Policy") != "" || w.Header().Get("Retry-After") != "" {
					t.Fatalf("a request with no decision got a body %q or rate-limit headers %v", w.Body.String(), w.Header())
				}
			}
		})
	}
}

// codeWriter records the status written, 0 if none (a ResponseRecorder
// says 200 then), and the headers and body as its recorder.
type codeWriter struct {
	*httptest.ResponseRecorder
	Code int
}

func (w *codeWriter) WriteHeader(code int) {
	if w.Code == 0 {
		w.Code = code
	}
	w.ResponseRecorder.WriteHeader(code)
}

func (w *codeWriter) Write(b []byte) (int, error) {
	if w.Code == 0 {
		w.Code = http.StatusOK
	}
	return w.ResponseRecorder.Write(b)
}

// ctxKeyWaiter is a Transport's PerHost with TakeContext, as redislimit's
// Limiter: its WaitN says the deadline is too close, and TakeContext
// answers d and err, after calling during (a cancel, say).
type ctxKeyWaiter struct {
	t      *testing.T
	d      ratelimit.Decision
	err    error
	during func()
}

func (c *ctxKeyWaiter) WaitN(context.Context, string, int) error {
	return ratelimit.ErrWouldExceedDeadline
}

func (c *ctxKeyWaiter) Take(string, int) ratelimit.Decision {
	c.t.Error("Take called; the PerHost has TakeContext")
	return c.d
}

func (c *ctxKeyWaiter) TakeContext(context.Context, string, int) (ratelimit.Decision, error) {
	if c.during != nil {
		c.during()
	}
	return c.d, c.err
}

// Transport learns the delay of a refused wait from a PerHost's TakeContext,
// with the request's ctx: a ctx that ends meanwhile fails the request with
// ctx.Err(); no decision with the ctx alive fails it with the wait's error,
// as a refusal that tells no delay does; a Decision gives a *DeadlineError.
func TestReview12TransportTakeContext(t *testing.T) {
	send := roundTripFunc(func(*http.Request) (*http.Response, error) {
		t.Error("the request was sent")
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	for _, tc := range []struct {
		name string
		pw   *ctxKeyWaiter
		want func(error) bool
	}{
		{"delay", &ctxKeyWaiter{t: t, d: ratelimit.Decision{Limit: 1, RetryAfter: 2 * time.Hour}},
			func(err error) bool {
				var de *ratelimit.DeadlineError
				return errors.As(err, &de) && de.Delay == 2*time.Hour && de.Key == "h"
			}},
		{"no decision", &ctxKeyWaiter{t: t, err: errors.New("store down")},
			func(err error) bool { return err == ratelimit.ErrWouldExceedDeadline }},
	} {
		tr := &ratelimit.Transport{PerHost: tc.pw, Key: func(*http.Request) string { return "h" }, Base: send}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://h.example/", nil)
		if _, err := tr.RoundTrip(req); !tc.want(err) {
			t.Errorf("%s: RoundTrip = %v", tc.name, err)
		}
	}
	cctx, ccancel := context.WithTimeout(context.Background(), time.Hour)
	defer ccancel()
	pw := &ctxKeyWaiter{t: t, err: context.Canceled, during: ccancel}
	tr := &ratelimit.Transport{PerHost: pw, Base: send}
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, "http://h.example/", nil)
	if _, err := tr.RoundTrip(req); err != context.Canceled {
		t.Errorf("cancelled during TakeContext: RoundTrip = %v, want %v", err, context.Canceled)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
