package adaptive_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ctxsync/ctxsync/adaptive"
)

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// closeTracker is a request body that notes its Close.
type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

func TestMiddlewareSheds(t *testing.T) {
	l := adaptive.New(fixed(1, adaptive.NoWait))
	release := make(chan struct{})
	entered := make(chan struct{})
	h := adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		w.WriteHeader(http.StatusNoContent)
	}))
	done := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		done <- rec.Code
	}()
	<-entered
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("shed request: %d, Retry-After %q; want 503, 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	close(release)
	if code := <-done; code != http.StatusNoContent {
		t.Fatalf("admitted request: %d, want 204", code)
	}
	if l.InFlight() != 0 || l.Shed() != 1 {
		t.Fatalf("InFlight %d Shed %d, want 0 1", l.InFlight(), l.Shed())
	}
}

func TestMiddlewareHandlerPanics(t *testing.T) {
	l := adaptive.New(adaptive.Config{})
	var again *adaptive.Ticket
	h := adaptive.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		// The handler calls back into the Limiter: no lock is held.
		again, _ = l.Acquire(context.Background())
		panic("handler")
	}))
	mustPanic(t, "handler", func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)) })
	again.Ignore()
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d after a handler panic, want 0", l.InFlight())
	}
}

func TestMiddlewareOverloadStatus(t *testing.T) {
	l := adaptive.New(adaptive.Config{})
	h := adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	for range 200 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d, want 0", l.InFlight())
	}
}

func TestTransportCheck(t *testing.T) {
	if err := (&adaptive.Transport{}).Check(); err == nil || !strings.HasPrefix(err.Error(), "adaptive: Transport with nil Limiter") {
		t.Fatalf("Check() of the zero Transport = %v", err)
	}
	if err := (&adaptive.Transport{Limiter: &adaptive.Limiter{}}).Check(); err == nil || !strings.HasPrefix(err.Error(), "adaptive: ") {
		t.Fatalf("Check() with a zero Limiter = %v", err)
	}
	if err := (&adaptive.Transport{Limiter: adaptive.New(adaptive.Config{})}).Check(); err != nil {
		t.Fatalf("Check() = %v, want nil", err)
	}
	mustPanic(t, "adaptive: Transport with nil Limiter", func() {
		_, _ = (&adaptive.Transport{}).RoundTrip(httptest.NewRequest("GET", "http://x/", nil))
	})
}

func TestTransport(t *testing.T) {
	l := adaptive.New(fixed(1, adaptive.NoWait))
	var inside int
	tr := &adaptive.Transport{Limiter: l, Base: rtFunc(func(r *http.Request) (*http.Response, error) {
		inside = l.InFlight()
		switch r.URL.Path {
		case "/503":
			return &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Body: http.NoBody}, nil
		case "/err":
			return nil, errors.New("refused")
		case "/panic":
			panic("base")
		case "/shed":
			// A second request while this one holds the only slot.
			body := &closeTracker{Reader: strings.NewReader("x")}
			req := httptest.NewRequest("POST", "http://x/ok", body)
			req.RequestURI = ""
			if _, err := (&adaptive.Transport{Limiter: l, Base: rtFunc(func(*http.Request) (*http.Response, error) {
				t.Error("a shed request was sent")
				return nil, nil
			})}).RoundTrip(req); err != adaptive.ErrShed || !body.closed {
				t.Errorf("RoundTrip at the limit = %v, body closed %v; want ErrShed, true", err, body.closed)
			}
		}
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})}
	for _, path := range []string{"/ok", "/503", "/err", "/shed"} {
		req := httptest.NewRequest("GET", "http://x"+path, nil)
		req.RequestURI = ""
		resp, err := tr.RoundTrip(req)
		if path == "/err" {
			if err == nil {
				t.Fatalf("%s: no error", path)
			}
		} else if err != nil || resp == nil {
			t.Fatalf("%s: %v, %v", path, resp, err)
		}
		if inside != 1 || l.InFlight() != 0 {
			t.Fatalf("%s: InFlight %d during, %d after; want 1, 0", path, inside, l.InFlight())
		}
	}
	req := httptest.NewRequest("GET", "http://x/panic", nil)
	req.RequestURI = ""
	mustPanic(t, "base", func() { _, _ = tr.RoundTrip(req) })
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d after Base panicked, want 0", l.InFlight())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	body := &closeTracker{Reader: strings.NewReader("x")}
	req = httptest.NewRequestWithContext(ctx, "POST", "http://x/ok", body)
	req.RequestURI = ""
	if _, err := tr.RoundTrip(req); err != context.Canceled || !body.closed {
		t.Fatalf("RoundTrip with a done ctx = %v, body closed %v", err, body.closed)
	}
}
