package httpx

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// wellFormedCase is a request made to srvURL and spoiled (or not): the
// differential tests send it through a real http.Transport and compare what
// net/http did with what WellFormed says.
type wellFormedCase struct {
	name  string
	spoil func(r *http.Request)
}

// sentByNetHTTP reports whether tr sent the request (a response came back,
// whatever its status) and the error of net/http's refusal otherwise. The
// server is on loopback and answers every request, so an error is a refusal.
func sentByNetHTTP(t *testing.T, tr *http.Transport, r *http.Request) (bool, error) {
	t.Helper()
	// Not a timing assertion: a bound, so that a request net/http neither
	// sends nor refuses cannot hold the test.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := tr.RoundTrip(r.WithContext(ctx))
	if err != nil {
		require.NoError(t, ctx.Err(), "net/http neither sent nor refused the request")
		return false, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return true, nil
}

// newReview2Server starts a server that answers every request with 200 and
// logs nothing; over TLS, it speaks HTTP/2.
func newReview2Server(t *testing.T, h2 bool) (*httptest.Server, *http.Transport) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	return srv, tr
}

// runWellFormedDifferential sends each case through net/http, over HTTP/1.1
// and over HTTP/2, and requires WellFormed to say true exactly when net/http
// sends the request.
func runWellFormedDifferential(t *testing.T, cases []wellFormedCase, protos ...string) {
	for _, proto := range protos {
		srv, tr := newReview2Server(t, proto == "h2")
		for _, c := range cases {
			mk := func() *http.Request {
				r, err := http.NewRequest(http.MethodGet, srv.URL+"/p", nil)
				require.NoError(t, err)
				c.spoil(r)
				return r
			}
			wf := WellFormed(mk())
			sent, err := sentByNetHTTP(t, tr, mk())
			if sent != wf {
				t.Errorf("%s, %s: net/http sent it: %v (err %v); WellFormed says %v", proto, c.name, sent, err, wf)
			}
		}
	}
}

func setHeader(k, v string) func(*http.Request) {
	return func(r *http.Request) { r.Header[k] = []string{v} }
}

func setTrailer(k, v string) func(*http.Request) {
	return func(r *http.Request) { r.Trailer = http.Header{k: {v}} }
}

func setMethod(m string) func(*http.Request) {
	return func(r *http.Request) { r.Method = m }
}

// TestReview2WellFormedAgreesWithNetHTTP: for every request here, net/http's
// own Transport, over HTTP/1.1 and HTTP/2, sends it exactly when WellFormed
// says it is well formed: a well-formed request (a lower-case or extension
// method, CONNECT without a path, a URL that is only a host, header values
// with tabs, bytes of 0x80 and above, empty values, no values, valid
// trailers) is never let past a breaker or a limiter, and one that net/http
// refuses (a method, header or trailer it cannot write, no host) always is.
func TestReview2WellFormedAgreesWithNetHTTP(t *testing.T) {
	cases := []wellFormedCase{
		{"plain GET", func(*http.Request) {}},
		{"empty method", setMethod("")},
		{"lower-case method", setMethod("get")},
		{"PATCH", setMethod(http.MethodPatch)},
		{"extension method", setMethod("M-SEARCH")},
		{"every token byte", setMethod("!#$%&'*+-.^_`|~09azAZ")},
		{"CONNECT without path", func(r *http.Request) { r.Method = http.MethodConnect; r.URL.Path = "" }},
		{"URL with only a host", func(r *http.Request) { r.URL.Path = "" }},
		{"header value with tab", setHeader("X-V", "a\tb")},
		{"header value of tab only", setHeader("X-V", "\t")},
		{"obs-text 0x80", setHeader("X-V", "\x80")},
		{"obs-text 0xff", setHeader("X-V", "caf\xe9\xff")},
		{"UTF-8 value", setHeader("X-V", "héllo")},
		{"empty value", setHeader("X-V", "")},
		{"spaces around value", setHeader("X-V", "  a  ")},
		{"nil values", func(r *http.Request) { r.Header["X-V"] = nil }},
		{"no values", func(r *http.Request) { r.Header["X-V"] = []string{} }},
		{"many values", func(r *http.Request) { r.Header["X-V"] = []string{"a", "", "\tb"} }},
		{"name with underscore", setHeader("X_V", "v")},
		{"name with every token byte", setHeader("!#$%&'*+-.^_`|~09azAZ", "v")},
		{"non-canonical name", setHeader("x-lower", "v")},
		{"valid trailer", setTrailer("X-T", "v")},
		{"empty trailer map", func(r *http.Request) { r.Trailer = http.Header{} }},
		{"fragment with control byte", func(r *http.Request) { r.URL.Fragment = "a\x01" }},
		{"path with control byte (escaped)", func(r *http.Request) { r.URL.Path = "/a\n\x7fb" }},
		{"query with space", func(r *http.Request) { r.URL.RawQuery = "a= b" }},
		{"Host override", func(r *http.Request) { r.Host = "example.test" }},
		{"Connection close", setHeader("Connection", "close")},
		{"Connection keep-alive", setHeader("Connection", "keep-alive")},
		{"websocket upgrade (HTTP/1.1 always)", func(r *http.Request) {
			r.Header.Set("Connection", "Upgrade")
			r.Header.Set("Upgrade", "websocket")
		}},
		{"Transfer-Encoding chunked header", setHeader("Transfer-Encoding", "chunked")},
		{"Keep-Alive header", setHeader("Keep-Alive", "5")},
		{"userinfo", func(r *http.Request) { r.SetBasicAuth("u\x01", "p") }},

		{"method with newline", setMethod("GET\n")},
		{"method non-ASCII", setMethod("GÉT")},
		{"method with separator", setMethod("(GET)")},
		{"method with slash", setMethod("GET/1")},
		{"header name with space", setHeader("Bad Name", "v")},
		{"empty header name", setHeader("", "v")},
		{"header name with colon", setHeader("X:", "v")},
		{"header name non-ASCII", setHeader("Ä", "v")},
		{"header name with newline", setHeader("X\n", "v")},
		{"header value LF", setHeader("X-V", "a\nb")},
		{"header value CR", setHeader("X-V", "a\rb")},
		{"header value CRLF", setHeader("X-V", "a\r\nb")},
		{"header value NUL", setHeader("X-V", "\x00")},
		{"header value DEL", setHeader("X-V", "\x7f")},
		{"header value 0x1f", setHeader("X-V", "\x1f")},
		{"bad value among good", func(r *http.Request) { r.Header["X-V"] = []string{"a", "b\n"} }},
		{"Host header in the map, bad", setHeader("Host", "a\nb")},
		{"trailer name bad", setTrailer("X T", "v")},
		{"trailer value bad", setTrailer("X-T", "a\nb")},
		{"no host", func(r *http.Request) { r.URL.Host = "" }},
		{"no host, Host set", func(r *http.Request) { r.URL.Host = ""; r.Host = "example.test" }},
		{"nil header", func(r *http.Request) { r.Header = nil }},
		{"nil URL", func(r *http.Request) { r.URL = nil }},
	}
	runWellFormedDifferential(t, cases, "h1", "h2")
	// net/http's HTTP/2, on a connection it holds, sends a method with a
	// space (see TestReview2WellFormedH2SendsWhatH1Refuses).
	runWellFormedDifferential(t, []wellFormedCase{{"method with space", setMethod("GE T")}}, "h1")
}
