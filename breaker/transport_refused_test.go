package breaker

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTransportMalformedRequestCountsNothing: a request that net/http refuses
// to send (a header it cannot write, a method that is not a token, no host)
// is the caller's bug, not a failure of the host. It went to Base, which
// refuses it, and counted in no breaker: three such requests opened a
// breaker of threshold 2 for every other request to that host.
func TestTransportMalformedRequestCountsNothing(t *testing.T) {
	refuse := rtFunc(func(r *http.Request) (*http.Response, error) {
		return nil, http.ErrNotSupported // stands for net/http's refusal
	})
	tr := &Transport{Base: refuse, Settings: Settings{FailureThreshold: 2}}
	bad := []func(*http.Request){
		func(r *http.Request) { r.Header.Set("X-Bad", "a\nb") },
		func(r *http.Request) { r.Header["Bad Name"] = []string{"v"} },
		func(r *http.Request) { r.Method = "GET\nMORE" },
		func(r *http.Request) { r.URL.Host = "" },
	}
	for i, spoil := range bad {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://a.test/", nil)
		require.NoError(t, err)
		spoil(req)
		_, err = tr.RoundTrip(req)
		require.ErrorIs(t, err, http.ErrNotSupported, "request %d", i)
	}
	if b := tr.Breaker("a.test"); b != nil {
		require.Equal(t, Closed, b.State())
		require.Zero(t, b.Counts().Requests, "%+v", b.Counts())
	}
	require.Zero(t, tr.Hosts(), "a breaker was made for requests never sent")
}
