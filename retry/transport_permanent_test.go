package retry_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/retry"
)

// newQuietServer starts a server that answers 200 and logs nothing (a
// refused TLS handshake would print a line), with TLS or not.
func newQuietServer(t *testing.T, useTLS bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if useTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// trusting returns a fresh Transport that trusts srv's certificate, with
// change applied to its TLS config.
func trusting(srv *httptest.Server, change func(*tls.Config)) *http.Transport {
	tr := srv.Client().Transport.(*http.Transport).Clone()
	change(tr.TLSClientConfig)
	return tr
}

// TestTransportRetriesWhatCannotSucceed pins a bug: transport errors that
// no retry can fix (a certificate not trusted, for another host or expired,
// a scheme or a method net/http refuses, a header it will not send, a URL
// without a host) were retried like a reset connection: three attempts, two
// waits and the shared Budget spent on each. Each is met here through a
// real http.Transport, against a real server: the request is sent once,
// OnRetry is never called, the *retry.Error says NotRetryable, and the
// error net/http gave is still there for errors.As.
//
// The unexported errors of net/http are told apart by the request (its
// method, headers and URL, checked as net/http checks them) or, for the
// scheme, by the request and the message together: the cases here catch a
// Go release that changes either.
func TestTransportRetriesWhatCannotSucceed(t *testing.T) {
	tlsSrv := newQuietServer(t, true)
	srv := newQuietServer(t, false)
	type check func(t *testing.T, err error)
	certErr := func(target any) check {
		return func(t *testing.T, err error) {
			var verr *tls.CertificateVerificationError
			require.ErrorAs(t, err, &verr)
			require.ErrorAs(t, err, target)
		}
	}
	message := func(want string) check {
		return func(t *testing.T, err error) { require.ErrorContains(t, err, want) }
	}
	get := func(url string) func() *http.Request {
		return func() *http.Request { r, _ := http.NewRequest(http.MethodGet, url, nil); return r }
	}
	withHeader := func(where, k, v string) func() *http.Request {
		return func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			if where == "trailer" {
				r.Trailer = http.Header{k: {v}}
			} else {
				r.Header[k] = []string{v}
			}
			return r
		}
	}
	for _, c := range []struct {
		name  string
		base  *http.Transport
		req   func() *http.Request
		check check
	}{
		{"unknown authority", &http.Transport{}, get(tlsSrv.URL), certErr(&x509.UnknownAuthorityError{})},
		{"hostname mismatch", trusting(tlsSrv, func(c *tls.Config) { c.ServerName = "other.example" }), get(tlsSrv.URL), certErr(&x509.HostnameError{})},
		{"expired", trusting(tlsSrv, func(c *tls.Config) {
			c.Time = func() time.Time { return time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC) }
		}), get(tlsSrv.URL), certErr(&x509.CertificateInvalidError{})},
		{"unsupported scheme", &http.Transport{}, get("ftp://" + srv.Listener.Addr().String() + "/"), message(`unsupported protocol scheme "ftp"`)},
		{"invalid header name", &http.Transport{}, withHeader("header", "Bad Name", "v"), message("net/http: invalid header field name")},
		{"invalid header value", &http.Transport{}, withHeader("header", "X-Value", "a\nb"), message("net/http: invalid header field value")},
		{"invalid trailer", &http.Transport{}, withHeader("trailer", "X-Bad\x00", "v"), message("net/http: invalid trailer field name")},
		{"invalid method", &http.Transport{}, func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			r.Method = "GE T"
			r.Header.Set("Idempotency-Key", "k1") // else never retried
			return r
		}, message("net/http: invalid method")},
		{"no host", &http.Transport{}, get("http:///path"), message("no Host in request URL")},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer c.base.CloseIdleConnections()
			sent := 0
			base := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				sent++
				return c.base.RoundTrip(r)
			})
			budget := retry.NewBudget(0, 1) // ten retries in its window
			var rec recorder
			tr := &retry.Transport{Base: base, Policy: retry.Policy{NoDelay: true, Budget: budget, OnRetry: rec.onRetry}}
			resp, err := tr.RoundTrip(c.req())
			require.Nil(t, resp)
			require.Equal(t, 1, sent, "attempts")
			require.Empty(t, rec.attempts, "OnRetry was called")
			rerr := asError(t, err)
			require.Equal(t, retry.NotRetryable, rerr.Reason, "%v", err)
			require.Equal(t, 1, rerr.Attempts)
			c.check(t, err)

			// Through an http.Client too, as users meet it.
			client := &http.Client{Transport: tr}
			resp, err = client.Do(c.req())
			require.Nil(t, resp)
			require.Equal(t, 2, sent, "attempts")
			c.check(t, err)
		})
	}

	// What a retry may fix is still retried: a request the server never
	// answered, and a well-formed one to a TLS server over a Transport
	// that trusts it.
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	gone := newQuietServer(t, false)
	gone.Close()
	resp, err := (&retry.Transport{Base: base, Policy: noDelay}).RoundTrip(get(gone.URL)())
	require.Nil(t, resp)
	require.Equal(t, retry.MaxAttemptsReached, asError(t, err).Reason, "%v", err)
	ok := trusting(tlsSrv, func(*tls.Config) {})
	defer ok.CloseIdleConnections()
	resp, err = (&retry.Transport{Base: ok, Policy: noDelay}).RoundTrip(get(tlsSrv.URL)())
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}

// TestTransportCertificateErrorsBare: the x509 errors end the retries also
// when they come bare, without the tls.CertificateVerificationError of a
// handshake around them (from a VerifyConnection, or a Base that verifies
// certificates itself), wrapped or not.
func TestTransportCertificateErrorsBare(t *testing.T) {
	for _, cerr := range []error{
		x509.UnknownAuthorityError{},
		x509.HostnameError{Host: "other.example"},
		x509.CertificateInvalidError{Reason: x509.Expired},
		&tls.CertificateVerificationError{Err: errors.New("no")},
	} {
		for _, err := range []error{cerr, fmt.Errorf("dial: %w", cerr)} {
			n := 0
			base := roundTripperFunc(func(*http.Request) (*http.Response, error) { n++; return nil, err })
			resp, got := (&retry.Transport{Base: base, Policy: noDelay}).RoundTrip(newGet(t, "https://x/"))
			require.Nil(t, resp)
			require.Equal(t, 1, n, "attempts for %v", err)
			require.Equal(t, retry.NotRetryable, asError(t, got).Reason)
			require.ErrorIs(t, got, err)
		}
	}
}

// TestTransportOtherSchemesRetried: a scheme Base was taught
// (http.Transport.RegisterProtocol) is no refusal: its transport errors are
// retried like any other, and so are those of a Base of its own whose
// message happens to name an unsupported scheme for an http URL.
func TestTransportOtherSchemesRetried(t *testing.T) {
	n := 0
	flaky := roundTripperFunc(func(*http.Request) (*http.Response, error) {
		if n++; n < 3 {
			return nil, errors.New("connection reset")
		}
		return response(200, nil, newBody("ok")), nil
	})
	base := &http.Transport{}
	base.RegisterProtocol("x-test", flaky)
	resp, err := (&retry.Transport{Base: base, Policy: noDelay}).RoundTrip(newGet(t, "x-test://somewhere/"))
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, 3, n)

	n = 0
	odd := roundTripperFunc(func(*http.Request) (*http.Response, error) {
		if n++; n < 2 {
			return nil, errors.New(`proxy: unsupported protocol scheme "gopher" upstream`)
		}
		return response(200, nil, newBody("ok")), nil
	})
	resp, err = (&retry.Transport{Base: odd, Policy: noDelay}).RoundTrip(newGet(t, "http://x/"))
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, 2, n)
}
