package breaker

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrecheckOfMalformedRequest: Precheck "returns the error that
// RoundTrip would refuse req with now", and its refusal counts as Rejected.
// RoundTrip sends a request net/http refuses to Base past an open breaker,
// refusing nothing; Precheck refused it all the same, and counted a
// rejection for a request the breaker never judges.
func TestPrecheckOfMalformedRequest(t *testing.T) {
	base := rtFunc(func(*http.Request) (*http.Response, error) { return nil, http.ErrNotSupported })
	tr := &Transport{Base: base}
	ok, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://a.test/", nil)
	require.NoError(t, err)
	_, _ = tr.RoundTrip(ok) // makes the host's breaker
	tr.Breaker("a.test").ForceOpen()
	bad, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://a.test/", nil)
	require.NoError(t, err)
	bad.Header["X-Bad"] = []string{"a\nb"}
	_, rtErr := tr.RoundTrip(bad)
	require.ErrorIs(t, rtErr, http.ErrNotSupported, "RoundTrip sends it to Base")
	before := tr.Breaker("a.test").Counts().Rejected
	require.NoError(t, tr.Precheck(bad), "Precheck refuses what RoundTrip would not")
	require.Equal(t, before, tr.Breaker("a.test").Counts().Rejected)
}
