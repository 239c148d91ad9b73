package retry

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
)

// cannotSucceed reports whether err, the transport error of sending req, is
// one that sending req again cannot cure: the server's certificate was not
// verified, or req is one that net/http refuses to send. Retrying those
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
	if !wellFormed(req) || unsupportedScheme(req, err) {
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

// wellFormed reports whether req passes the checks net/http's Transport
// makes before it sends a request of scheme http or https: a URL and a
// header map, a method that is a token, header and trailer fields it can
// write, and a host. A request of another scheme passes: Base decides.
func wellFormed(req *http.Request) bool {
	if req.URL == nil || req.Header == nil {
		return false
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return true
	}
	return (req.Method == "" || isToken(req.Method)) && req.URL.Host != "" &&
		validFields(req.Header) && validFields(req.Trailer)
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

// validFields reports whether every field of h can be written on the wire:
// its name a token (RFC 9110, 5.1), its values free of control characters
// but the horizontal tab (RFC 9110, 5.5), as net/http requires.
func validFields(h http.Header) bool {
	for name, values := range h {
		if !isToken(name) {
			return false
		}
		for _, v := range values {
			for i := 0; i < len(v); i++ {
				if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
					return false
				}
			}
		}
	}
	return true
}

// isToken reports whether s is a token of RFC 9110, 5.6.2: one or more
// letters, digits and !#$%&'*+-.^_`|~.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0:
		default:
			return false
		}
	}
	return true
}
