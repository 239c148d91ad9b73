package breaker

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestTransportKeyPanicClosesBody: a panic in Key, user code that runs before
// the request is sent, reaches the caller with the request's body closed, as
// a RoundTripper must close the body of a request it does not send (it was
// left open); likewise a bad Settings found as a host's breaker is made.
func TestTransportKeyPanicClosesBody(t *testing.T) {
	base := rtFunc(func(*http.Request) (*http.Response, error) { panic("sent") })
	for name, tr := range map[string]*Transport{
		"Key":      {Base: base, Key: func(*http.Request) string { panic("Key") }},
		"Settings": {Base: base, Settings: Settings{FailureRateThreshold: 200}},
	} {
		t.Run(name, func(t *testing.T) {
			body := &trackedBody{Reader: strings.NewReader("x")}
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://a.test/", body)
			if err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if recover() == nil {
						t.Error("RoundTrip did not panic")
					}
				}()
				_, _ = tr.RoundTrip(req)
			}()
			if got := body.closed.Load(); got != 1 {
				t.Errorf("the body of a request not sent was closed %d times, want 1", got)
			}
		})
	}
}
