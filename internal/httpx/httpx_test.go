package httpx

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHostKey(t *testing.T) {
	for in, want := range map[string]string{
		"http://Example.COM/":         "example.com",
		"http://example.com:80/":      "example.com",
		"http://example.com:443/":     "example.com:443",
		"http://example.com:/":        "example.com",
		"https://[::1]:/":             "[::1]",
		"https://example.com:443/":    "example.com",
		"https://example.com:80/":     "example.com:80",
		"http://127.0.0.1:8080/":      "127.0.0.1:8080",
		"http://[::1]:80/":            "[::1]",
		"https://[2001:DB8::1]:8443/": "[2001:db8::1]:8443",
	} {
		req, err := http.NewRequest(http.MethodGet, in, nil)
		require.NoError(t, err)
		require.Equal(t, want, HostKey(req.URL), "HostKey(%s)", in)
	}
	require.Equal(t, "", HostKey(nil))
}

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestCloseBody(t *testing.T) {
	body := &closeCounter{Reader: strings.NewReader("x")}
	req, err := http.NewRequest(http.MethodPost, "http://example.com/", body)
	require.NoError(t, err)
	CloseBody(req)
	require.Equal(t, 1, body.closed)
	req, err = http.NewRequest(http.MethodGet, "http://example.com/", nil)
	require.NoError(t, err)
	CloseBody(req) // no body: nothing to close
}
