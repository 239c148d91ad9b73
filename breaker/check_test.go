package breaker

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTransportCheck: Check returns, as an error, what making a host's
// breaker would panic with, before any request is sent.
func TestTransportCheck(t *testing.T) {
	require.NoError(t, (&Transport{}).Check(), "the zero Transport")
	for _, tr := range []*Transport{
		{MaxHosts: -1},
		{Settings: Settings{FailureRateThreshold: 101}},
		{Settings: Settings{SlowCallRateThreshold: 50}},
	} {
		err := tr.Check()
		require.Error(t, err)
		require.True(t, strings.HasPrefix(err.Error(), "breaker: "), err.Error())
		req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
		tr.Base = rtFunc(func(*http.Request) (*http.Response, error) { panic("sent") })
		require.PanicsWithValue(t, err.Error(), func() { _, _ = tr.RoundTrip(req) })
	}
}
