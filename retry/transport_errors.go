package retry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"

	"github.com/ctxsync/ctxsync/internal/httpx"
)

// cannotSucceed reports whether err, the transport error of sending req, is
// one that sending req again cannot cure: the server's certificate was not
// verified, req is one that net/http refuses to send, or one that costs more
// than a ratelimit.Transport's limiter ever allows. Retrying those
// spends attempts, waits and the shared Budget for the same error.
//
// net/http reports a request it refuses with unexported errors, told apart
// only by their messages. So the request itself is checked, as net/http
// checks it before sending, and a message is read only for the scheme,
// where the request alone cannot tell: Base may have been taught other
// schemes (http.Transport.RegisterProtocol), whose failures may pass. The
// tests meet each case through a real http.Transport, so a Go release that
// changes a check or the message shows there.
func cannotSucceed(req *http.Request, err error) bool {
	// An attempt that failed with a method that is not a token failed on
	// it: HTTP/1.1 refuses such a method, every time.
	if !httpx.WellFormed(req) || !httpx.TokenMethod(req) || unsupportedScheme(req, err) {
		return true
	}
	// A ratelimit.Transport in Base refused a request that costs more
	// than its limiter ever allows: so it will every time.
	if errors.Is(err, httpx.ErrExceedsBurst) {
		return true
	}
	// The certificate errors last: errors.As allocates, the checks above
	// do not. tls.CertificateVerificationError wraps every failure of the
	// handshake's verification; the x509 errors may also come bare, from a
	// VerifyConnection or a Base that verifies by itself.
	var (
		verr *tls.CertificateVerificationError
		aerr x509.UnknownAuthorityError
		herr x509.HostnameError
		ierr x509.CertificateInvalidError
	)
	return errors.As(err, &verr) || errors.As(err, &aerr) || errors.As(err, &herr) || errors.As(err, &ierr)
}

// unsupportedScheme reports whether err is net/http's refusal of req's
// scheme: http.Transport sends only http and https, and says so in an error
// of an unexported type.
func unsupportedScheme(req *http.Request, err error) bool {
	if req.URL == nil || req.URL.Scheme == "http" || req.URL.Scheme == "https" {
		return false
	}
	return strings.Contains(err.Error(), "unsupported protocol scheme")
}
