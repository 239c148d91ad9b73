package adaptive_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ctxsync/ctxsync/adaptive"
)

// readFromWriter is a writer underneath that has ReadFrom, as net/http's
// HTTP/1 writer has it (to send a file with sendfile).
type readFromWriter struct {
	*baseWriter
	readFrom int
	got      bytes.Buffer
}

func (w *readFromWriter) ReadFrom(r io.Reader) (int64, error) {
	w.readFrom++
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.got.ReadFrom(r)
}

// onlyReader hides a reader's WriteTo, as a file's does for a writer that is
// not a socket: io.Copy then asks the destination for ReadFrom.
type onlyReader struct{ io.Reader }

// TestMiddlewareWriterReadsFrom pins a bug of Middleware's writer: it had no
// ReadFrom, so a handler that copies a file to its writer (io.Copy,
// http.ServeContent, http.ServeFile) went through Write in 32 KB chunks, and
// net/http's sendfile, which its writer's ReadFrom uses, was lost behind the
// middleware. Right: the writer is an io.ReaderFrom that passes the copy to
// the writer underneath when it is one (and copies through Write otherwise).
func TestMiddlewareWriterReadsFrom(t *testing.T) {
	l := adaptive.New(adaptive.Config{})
	under := &readFromWriter{baseWriter: &baseWriter{}}
	body := bytes.Repeat([]byte("x"), 100<<10)
	h := adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := w.(io.ReaderFrom); !ok {
			t.Error("Middleware's writer is not an io.ReaderFrom")
		}
		n, err := io.Copy(w, onlyReader{bytes.NewReader(body)})
		if n != int64(len(body)) || err != nil {
			t.Errorf("io.Copy = %d, %v; want %d, nil", n, err, len(body))
		}
		w.WriteHeader(http.StatusServiceUnavailable) // too late: 200 went with the body
	}))
	h.ServeHTTP(under, httptest.NewRequest("GET", "/", nil))
	if under.readFrom != 1 {
		t.Errorf("ReadFrom of the writer underneath called %d times, want 1", under.readFrom)
	}
	if !bytes.Equal(under.got.Bytes(), body) {
		t.Errorf("writer underneath got %d bytes, want %d", under.got.Len(), len(body))
	}
	if under.code != http.StatusOK {
		t.Errorf("status sent %d, want 200", under.code)
	}
	if l.InFlight() != 0 {
		t.Fatalf("InFlight %d, want 0", l.InFlight())
	}

	// Over a writer without ReadFrom, the copy goes through its Write.
	plain := &baseWriter{}
	var wrote int64
	h = adaptive.Middleware(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wrote, _ = io.Copy(w, onlyReader{bytes.NewReader(body)})
	}))
	h.ServeHTTP(plain, httptest.NewRequest("GET", "/", nil))
	if wrote != int64(len(body)) || plain.code != http.StatusOK {
		t.Errorf("copy over a writer without ReadFrom: %d bytes, status %d; want %d, 200", wrote, plain.code, len(body))
	}
}
