package adaptive_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctxsync/ctxsync/adaptive"
)

// baseWriter is a ResponseWriter with no optional interface: an HTTP/2
// writer, as far as Hijacker goes, or a test double, or a wrapper.
type baseWriter struct {
	header  http.Header
	code    int
	flushed bool
}

func (w *baseWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *baseWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(b), nil
}

func (w *baseWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

type flushOnly struct{ *baseWriter }

func (w flushOnly) Flush() {
	w.flushed = true
	if w.code == 0 {
		w.code = http.StatusOK
	}
}

type hijackOnly struct{ *baseWriter }

func (hijackOnly) Hijack() (net.Conn, *bufio.ReadWriter, error) { return pipeConn() }

type flushHijack struct{ flushOnly }

func (flushHijack) Hijack() (net.Conn, *bufio.ReadWriter, error) { return pipeConn() }

func pipeConn() (net.Conn, *bufio.ReadWriter, error) {
	c1, c2 := net.Pipe()
	c2.Close()
	return c1, bufio.NewReadWriter(bufio.NewReader(c1), bufio.NewWriter(c1)), nil
}

// unwrapOnly is a middleware's writer in front that has none of the
// optional interfaces, but lets http.ResponseController reach them.
type unwrapOnly struct{ http.ResponseWriter }

func (w unwrapOnly) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Regression: the writer Middleware gave its handler was always an
// http.Flusher and an http.Hijacker, even over a writer that was neither
// (an HTTP/2 connection cannot be hijacked). A handler that tells HTTP/2,
// or what it may do, by a type assertion (as most do: "if _, ok :=
// w.(http.Hijacker)") was misled, and learnt the truth only from the error
// of the call. Right: the handler's writer is a Flusher, a Hijacker, both
// or neither as the writer underneath can be reached as one by
// http.ResponseController (directly, or through a writer's Unwrap), and
// has Unwrap to the writer underneath.
func TestMiddlewareWriterHasExactlyTheInterfaces(t *testing.T) {
	cases := []struct {
		name          string
		w             func(*baseWriter) http.ResponseWriter
		flush, hijack bool
	}{
		{"neither", func(b *baseWriter) http.ResponseWriter { return b }, false, false},
		{"Flusher", func(b *baseWriter) http.ResponseWriter { return flushOnly{b} }, true, false},
		{"Hijacker", func(b *baseWriter) http.ResponseWriter { return hijackOnly{b} }, false, true},
		{"both", func(b *baseWriter) http.ResponseWriter { return flushHijack{flushOnly{b}} }, true, true},
		{"Unwrap to neither", func(b *baseWriter) http.ResponseWriter { return unwrapOnly{b} }, false, false},
		{"Unwrap to both", func(b *baseWriter) http.ResponseWriter { return unwrapOnly{flushHijack{flushOnly{b}}} }, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := adaptive.New(adaptive.Config{})
			base := &baseWriter{}
			under := c.w(base)
			h := adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, ok := w.(http.Flusher); ok != c.flush {
					t.Errorf("writer is an http.Flusher: %v, want %v", ok, c.flush)
				}
				if _, ok := w.(http.Hijacker); ok != c.hijack {
					t.Errorf("writer is an http.Hijacker: %v, want %v", ok, c.hijack)
				}
				if _, ok := w.(interface{ FlushError() error }); ok && !c.flush {
					t.Error("writer has FlushError over a writer that cannot flush")
				}
				u, ok := w.(interface{ Unwrap() http.ResponseWriter })
				if !ok {
					t.Fatal("writer has no Unwrap")
				}
				if u.Unwrap() != under {
					t.Errorf("Unwrap() = %T, want the writer underneath, %T", u.Unwrap(), under)
				}
				rc := http.NewResponseController(w)
				if err := rc.Flush(); (err == nil) != c.flush || err != nil && !errors.Is(err, http.ErrNotSupported) {
					t.Errorf("ResponseController.Flush() = %v; the writer underneath can flush: %v", err, c.flush)
				}
				if !c.hijack {
					if _, _, err := rc.Hijack(); !errors.Is(err, http.ErrNotSupported) {
						t.Errorf("ResponseController.Hijack() = %v, want http.ErrNotSupported", err)
					}
				}
				if c.flush && !base.flushed {
					t.Error("the flush did not reach the writer underneath")
				}
				w.WriteHeader(http.StatusAccepted)
			}))
			h.ServeHTTP(under, httptest.NewRequest("GET", "/", nil))
			want := http.StatusAccepted
			if c.flush {
				want = http.StatusOK // the flush sent it
			}
			if base.code != want {
				t.Errorf("status sent %d, want %d", base.code, want)
			}
			if l.InFlight() != 0 {
				t.Fatalf("InFlight %d, want 0", l.InFlight())
			}
		})
	}
}

// The same against net/http's own writers: over HTTP/1 the handler's writer
// is a Flusher and a Hijacker, over HTTP/2 a Flusher and not a Hijacker.
func TestMiddlewareWriterOverHTTP2(t *testing.T) {
	l := adaptive.New(adaptive.Config{})
	h := adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, flush := w.(http.Flusher)
		_, hijack := w.(http.Hijacker)
		fmt.Fprintf(w, "%d %v %v", r.ProtoMajor, flush, hijack)
	}))
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	for _, c := range []struct {
		h2   bool
		want string
	}{{true, "2 true false"}, {false, "1 true true"}} {
		tr := srv.Client().Transport.(*http.Transport).Clone()
		tr.ForceAttemptHTTP2 = c.h2
		if !c.h2 {
			tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tr.CloseIdleConnections()
		if string(b) != c.want {
			t.Errorf("HTTP/%d: the handler saw (proto flusher hijacker) %q, want %q", resp.ProtoMajor, b, c.want)
		}
	}
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d, want 0", l.InFlight())
	}
}

type panicUnwrap struct{ http.ResponseWriter }

func (panicUnwrap) Unwrap() http.ResponseWriter { panic("Unwrap") }

// Middleware looks through the Unwrap of a writer in front, user code, to
// learn what the server's writer can do: if it panics, the panic goes on and
// the request's Ticket is given back.
func TestMiddlewareWriterUnwrapPanics(t *testing.T) {
	l := adaptive.New(adaptive.Config{})
	h := adaptive.Middleware(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	func() {
		defer func() {
			if p := recover(); p != "Unwrap" {
				t.Errorf("recover() = %v, want the panic of Unwrap", p)
			}
		}()
		h.ServeHTTP(panicUnwrap{&baseWriter{}}, httptest.NewRequest("GET", "/", nil))
	}()
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d after Unwrap panicked, want 0", l.InFlight())
	}
}
