package ratelimit

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

type review2Body struct {
	io.Reader
	closed atomic.Int32
}

func (b *review2Body) Close() error { b.closed.Add(1); return nil }

// TestReview2TransportRealRefusalsTakeNothing: through a real http.Transport,
// requests net/http refuses (a header, trailer or method it cannot write, no
// host) fail with its error, their body closed once, and take no token and
// no Tally count, globally, per host and through a Keyed's handle; odd but
// well-formed requests (lower-case and extension methods, header values with
// a tab, bytes of 0x80 and above or nothing, CONNECT without a path) take
// their token and count once each.
func TestReview2TransportRealRefusalsTakeNothing(t *testing.T) {
	srv, base, hits := testutil.LoopbackServer(t, false)
	host := strings.TrimPrefix(srv.URL, "http://")
	bad := []func(r *http.Request){
		func(r *http.Request) { r.Header["X-Bad"] = []string{"a\r\nb"} },
		func(r *http.Request) { r.Header["Bad Name"] = []string{"v"} },
		func(r *http.Request) { r.Header["X-Bad"] = []string{"ok", "\x7f"} },
		func(r *http.Request) { r.Trailer = http.Header{"X-T": {"\x00"}} },
		func(r *http.Request) { r.Trailer = http.Header{"X T": {"v"}} },
		func(r *http.Request) { r.Method = "G\x01T" },
		func(r *http.Request) { r.Method = "GE\nT" },
		func(r *http.Request) { r.URL.Host = ""; r.Host = host },
	}
	good := []func(r *http.Request){
		func(*http.Request) {},
		func(r *http.Request) { r.Method = "get" },
		func(r *http.Request) { r.Method = "M-SEARCH" },
		func(r *http.Request) { r.Header["X-V"] = []string{"a\tb"} },
		func(r *http.Request) { r.Header["X-V"] = []string{"caf\xe9\xff\x80"} },
		func(r *http.Request) { r.Header["X-V"] = []string{""} },
		func(r *http.Request) { r.Trailer = http.Header{"X-T": {"v"}} },
		func(r *http.Request) { r.URL.Path = "" },
		func(r *http.Request) { r.Method = http.MethodConnect; r.URL.Path = "" },
	}
	for _, name := range []string{"global", "perHost", "handle"} {
		var tally Tally
		// A burst of exactly the good requests, and no refill to speak of.
		tr := tallyTransports(&tally, 1e-4, len(good), base)[name]
		hits.Store(0)
		for i, spoil := range bad {
			body := &review2Body{Reader: strings.NewReader("payload")}
			r, err := http.NewRequest(http.MethodPut, srv.URL+"/", body)
			require.NoError(t, err)
			spoil(r)
			_, err = testutil.Send(t, tr, r)
			require.Error(t, err, "%s: bad request %d", name, i)
			require.EqualValues(t, 1, body.closed.Load(), "%s: bad request %d: body not closed once", name, i)
		}
		require.Zero(t, tally.Counts(), "%s: a request net/http refused was counted", name)
		require.Zero(t, hits.Load())
		for i, spoil := range good {
			r, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
			require.NoError(t, err)
			spoil(r)
			_, err = testutil.Send(t, tr, r)
			require.NoError(t, err, "%s: good request %d", name, i)
		}
		require.Equal(t, TallyCounts{Waited: int64(len(good))}, tally.Counts(), name)
		require.EqualValues(t, len(good), hits.Load(), name)
		// The burst is spent: the next good request cannot have a token
		// before its deadline, and is refused without being sent.
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/", nil)
		require.NoError(t, err)
		_, err = tr.RoundTrip(r)
		cancel()
		require.ErrorIs(t, err, ErrWouldExceedDeadline, name)
		require.EqualValues(t, len(good), hits.Load(), name)
	}
}
