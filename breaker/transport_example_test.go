package breaker_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
)

// inProcess is an http.RoundTripper that serves requests with a handler in
// the same process, so that the examples need no network.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return rec.Result(), nil
}

// A Transport gives each host its own breaker: after three 5xx responses from
// one host, its requests are refused without being sent, while another
// host's go on. A 4xx is the request's fault, not the host's, and does not
// count.
func ExampleTransport() {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Host == "down.example":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		case r.URL.Path == "/missing":
			http.NotFound(w, r)
		}
	})
	client := &http.Client{Transport: &breaker.Transport{
		Base:     inProcess{handler},
		Settings: breaker.Settings{FailureThreshold: 3, OpenTimeout: time.Minute},
		OnStateChange: func(host string, from, to breaker.State, _ breaker.Counts) {
			fmt.Printf("  breaker of %s: %v -> %v\n", host, from, to)
		},
	}}
	for _, url := range []string{
		"http://up.example/missing", "http://up.example/missing", "http://up.example/missing",
		"http://down.example/", "http://down.example/", "http://down.example/",
		"http://down.example/", "http://up.example/",
	} {
		resp, err := client.Get(url)
		if err != nil {
			fmt.Printf("GET %s: refused: %t\n", url, errors.Is(err, breaker.ErrOpen))
			continue
		}
		resp.Body.Close()
		fmt.Printf("GET %s: %s\n", url, resp.Status)
	}
	// Output:
	// GET http://up.example/missing: 404 Not Found
	// GET http://up.example/missing: 404 Not Found
	// GET http://up.example/missing: 404 Not Found
	// GET http://down.example/: 503 Service Unavailable
	// GET http://down.example/: 503 Service Unavailable
	//   breaker of down.example: closed -> open
	// GET http://down.example/: 503 Service Unavailable
	// GET http://down.example/: refused: true
	// GET http://up.example/: 200 OK
}
