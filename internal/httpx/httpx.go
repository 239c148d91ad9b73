// Package httpx holds what the HTTP transports of ratelimit and breaker share.
package httpx

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

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

// WellFormed reports whether req passes the checks net/http's Transport
// makes before it sends a request of scheme http or https: a URL and a
// header map, a method that is a token, header and trailer fields it can
// write, and a host. A request of another scheme passes: the RoundTripper
// decides. A request that fails is a bug of the caller, not a failure of the
// host: no attempt of it should be retried, counted against the host, or
// charged to a limit.
func WellFormed(req *http.Request) bool {
	if req.URL == nil || req.Header == nil {
		return false
	}
	if s := req.URL.Scheme; s != "http" && s != "https" {
		return true
	}
	return (req.Method == "" || isToken(req.Method)) && req.URL.Host != "" &&
		validFields(req.Header) && validFields(req.Trailer)
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
