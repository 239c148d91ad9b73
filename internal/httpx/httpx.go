// Package httpx holds what the HTTP transports of ratelimit, breaker and
// retry share.
package httpx

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrExceedsBurst is ratelimit.ErrExceedsBurst, the error of a request that
// costs more than its limiter can ever allow. It lives here so that
// retry.Transport can tell it, without importing ratelimit, as an error
// that sending the request again cannot cure.
var ErrExceedsBurst = errors.New("ratelimit: n exceeds the limiter's burst")

// StatusError is an HTTP response seen as an error by the client transports:
// breaker.StatusError and retry.StatusError are this one type, so that a
// program that stacks them matches a status with either name. Its fields say
// which response: breaker.Transport makes one for a status of 500 or above
// (the failure its breaker records), retry.Transport for a status it retries
// (429, 502, 503, 504). Either way the response itself goes to the caller.
//
// A StatusError is a plain value: it may be copied. A nil *StatusError is no
// response: its Error says it is nil, and its RetryAfter is 0.
type StatusError struct {
	StatusCode int    // as in http.Response: 503
	Status     string // as in http.Response: "503 Service Unavailable"
	// Delay is the wait the response's Retry-After asks for, when the
	// Transport that made the error honours it: retry.Transport does for a
	// 429 or a 503. It is 0 otherwise, and always from breaker.Transport,
	// which never waits.
	Delay time.Duration
}

// Error returns "ctxsync: response status 503 Service Unavailable", and the
// Retry-After when there is one: "..., retry after 1s".
func (e *StatusError) Error() string {
	if e == nil {
		return "ctxsync: <nil *StatusError>"
	}
	status := e.Status
	if status == "" {
		status = strconv.Itoa(e.StatusCode)
	}
	if e.Delay > 0 {
		return "ctxsync: response status " + status + ", retry after " + e.Delay.String()
	}
	return "ctxsync: response status " + status
}

// RetryAfter returns Delay: the floor of the next wait of a retry.Policy
// that sees the error.
func (e *StatusError) RetryAfter() time.Duration {
	if e == nil {
		return 0
	}
	return e.Delay
}

// Misuse runs check, which panics with a message on a mistake of
// configuration, and returns that message as an error, or nil: a Transport's
// Check, which finds at build time what its RoundTrip would panic with.
// A panic of another kind goes on.
func Misuse(check func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, ok := r.(string)
			if !ok {
				panic(r)
			}
			err = errors.New(msg)
		}
	}()
	check()
	return nil
}

// CloseBody closes the body of a request that will not be sent: a
// RoundTripper closes it, even on errors.
func CloseBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// HostKey returns the key of the host u names: lowercased, without the port
// when it is the scheme's default, so that "Example.com" and
// "example.com:443" share a limit or a breaker over https.
func HostKey(u *url.URL) string {
	if u == nil {
		return ""
	}
	// An empty port is the default one, as net/http reads it.
	host := strings.TrimSuffix(strings.ToLower(u.Host), ":")
	switch {
	case u.Scheme == "http" && strings.HasSuffix(host, ":80"):
		host = host[:len(host)-len(":80")]
	case u.Scheme == "https" && strings.HasSuffix(host, ":443"):
		host = host[:len(host)-len(":443")]
	}
	return host
}

// WellFormed reports whether req may be sent by net/http's Transport, as far
// as the request alone can tell, for a request of scheme http or https. It
// returns false only for a request that net/http refuses, or never sends,
// over HTTP/1.1 and HTTP/2 alike: no URL or header map, no host, a method
// with a control byte, a header or trailer field it cannot write, a control
// byte (a tab included) in the URL's path and query, a trailer key that
// frames the message (Content-Length, Transfer-Encoding, Trailer). Such a
// request is a bug of the caller, not a failure of the host: no attempt of it
// should be retried, counted against the host, or charged to a limit.
//
// What only one of the two protocols refuses passes (HTTP/1.1 refuses a
// method that is not a token and a ContentLength without a Body; HTTP/2, on
// a connection it holds, sends those, and refuses a Host with a space or a
// Connection header): saying false there would let a request that is sent
// past a breaker or a limit. A request of another scheme passes: the
// RoundTripper decides.
func WellFormed(req *http.Request) bool {
	if req.URL == nil || req.Header == nil {
		return false
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return true
	}
	return req.URL.Host != "" && validValue(req.Method) && noCTL(req.URL.RequestURI()) &&
		validFields(req.Header) && validFields(req.Trailer) && validTrailer(req.Trailer)
}

// noCTL reports whether s has no control byte, the tab included: net/http
// writes none in a request's URL (HTTP/1.1 refuses it, HTTP/2 never sends
// it).
func noCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < ' ' || b == 0x7f {
			return false
		}
	}
	return true
}

// validTrailer reports whether t has none of the keys that both protocols
// refuse in a trailer, as they frame the message.
func validTrailer(t http.Header) bool {
	for k := range t {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Transfer-Encoding", "Trailer":
			return false
		}
	}
	return true
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
			if !validValue(v) {
				return false
			}
		}
	}
	return true
}

// validValue reports whether s is free of control bytes but the horizontal
// tab (RFC 9110, 5.5), as net/http requires of field values, and of methods
// and URLs on every protocol.
func validValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// TokenMethod reports whether the method of req, of scheme http or https, is
// one that net/http sends over HTTP/1.1: a token, or empty for GET. (Over
// HTTP/2 it may send others: see WellFormed.)
func TokenMethod(req *http.Request) bool {
	if req.URL != nil && req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return true
	}
	return req.Method == "" || isToken(req.Method)
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
