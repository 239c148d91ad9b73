package breaker

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReview2TransportRealRefusalsCountNothing: through a real http.Transport
// to a well host, requests net/http refuses (a header, trailer or method it
// cannot write, no host) each fail with net/http's error, their body closed,
// and leave the host's breaker of threshold 1 closed, with nothing counted;
// well-formed requests that look odd (a lower-case or extension method, a
// header value with a tab or bytes of 0x80 and above, an empty value,
// CONNECT with no path) go through the breaker and are counted, each one.
func TestReview2TransportRealRefusalsCountNothing(t *testing.T) {
	srv, base, hits := testutil.LoopbackServer(t, false)
	tr := &Transport{Base: base, Settings: Settings{FailureThreshold: 1}}
	host := strings.TrimPrefix(srv.URL, "http://")
	bad := []func(r *http.Request){
		func(r *http.Request) { r.Header["X-Bad"] = []string{"a\r\nb"} },
		func(r *http.Request) { r.Header["Bad Name"] = []string{"v"} },
		func(r *http.Request) { r.Header[""] = []string{"v"} },
		func(r *http.Request) { r.Header["X-Bad"] = []string{"ok", "\x7f"} },
		func(r *http.Request) { r.Trailer = http.Header{"X-T": {"\x00"}} },
		func(r *http.Request) { r.Method = "G\x01T" },
		func(r *http.Request) { r.Method = "GET\x7f" },
		func(r *http.Request) { r.URL.Host = ""; r.Host = host },
	}
	for i, spoil := range bad {
		body := &trackedBody{Reader: strings.NewReader("payload")}
		r, err := http.NewRequest(http.MethodPut, srv.URL+"/", body)
		require.NoError(t, err)
		spoil(r)
		_, err = testutil.Send(t, tr, r)
		require.Error(t, err, "bad request %d", i)
		require.NotErrorIs(t, err, ErrOpen, "bad request %d", i)
		require.EqualValues(t, 1, body.closed.Load(), "bad request %d: body not closed once", i)
	}
	require.Zero(t, tr.Hosts(), "a breaker was made for requests never sent")
	require.Zero(t, hits.Load())

	good := []func(r *http.Request){
		func(*http.Request) {},
		func(r *http.Request) { r.Method = "get" },
		func(r *http.Request) { r.Method = "M-SEARCH" },
		func(r *http.Request) { r.Header["X-V"] = []string{"a\tb"} },
		func(r *http.Request) { r.Header["X-V"] = []string{"caf\xe9\xff\x80"} },
		func(r *http.Request) { r.Header["X-V"] = []string{""} },
		func(r *http.Request) { r.Header["X-V"] = nil },
		func(r *http.Request) { r.Trailer = http.Header{"X-T": {"v"}} },
		func(r *http.Request) { r.URL.Path = "" },
		func(r *http.Request) { r.Method = http.MethodConnect; r.URL.Path = "" },
	}
	for i, spoil := range good {
		r, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
		require.NoError(t, err)
		spoil(r)
		_, err = testutil.Send(t, tr, r)
		require.NoError(t, err, "good request %d", i)
	}
	b := tr.Breaker(host)
	require.NotNil(t, b)
	require.Equal(t, Closed, b.State())
	c := b.Counts()
	require.EqualValues(t, len(good), c.Requests, "%+v", c)
	require.EqualValues(t, len(good), c.Successes, "%+v", c)
	require.EqualValues(t, len(good), hits.Load())
}

// TestReview2TransportMalformedPastOpenBreaker: a request net/http refuses
// goes to Base even while the host's breaker is open (it is refused there,
// not by the breaker), and is not counted as rejected.
func TestReview2TransportMalformedPastOpenBreaker(t *testing.T) {
	srv, base, hits := testutil.LoopbackServer(t, false)
	tr := &Transport{Base: base}
	host := strings.TrimPrefix(srv.URL, "http://")
	_, err := testutil.Send(t, tr, mustGet(t, srv.URL+"/"))
	require.NoError(t, err)
	tr.Breaker(host).ForceOpen()
	before := tr.Breaker(host).Counts()
	r := mustGet(t, srv.URL+"/")
	r.Header["X-Bad"] = []string{"\n"}
	_, err = testutil.Send(t, tr, r)
	require.ErrorContains(t, err, "net/http: invalid header field value")
	require.NotErrorIs(t, err, ErrOpen)
	require.Equal(t, before, tr.Breaker(host).Counts())
	_, err = testutil.Send(t, tr, mustGet(t, srv.URL+"/"))
	require.ErrorIs(t, err, ErrOpen, "a well-formed request went past the open breaker")
	require.EqualValues(t, 1, hits.Load())
}

func mustGet(t *testing.T, url string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	return r
}
