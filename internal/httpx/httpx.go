// Package httpx holds what the HTTP transports of ratelimit and breaker share.
package httpx

import (
	"net/http"
	"net/url"
	"strings"
)

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
