package breaker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Regression: ForceOpen promises a breaker that refuses every call until
// Reset, and Transport.Breaker is the way to ForceOpen a host (for its
// maintenance, say); but when a request to a new host found the cap of
// MaxHosts reached and every breaker sampled open (an outage: the hosts
// down have open breakers), the least recently used was dropped, forced or
// not, and the host under maintenance, the least used since it refuses
// everything, started again closed: its requests were sent. Right: a
// breaker forced open is dropped only if every breaker sampled is forced
// open too.
func TestTransportKeepsForcedOpenHost(t *testing.T) {
	tr := &Transport{Base: &statusBase{}, MaxHosts: 4, Settings: Settings{FailureThreshold: 1, OpenTimeout: time.Hour}}
	get := func(host, path string) {
		resp, _, err := send(t, tr, context.Background(), "http://"+host+path)
		if err == nil {
			_ = resp.Body.Close()
		}
	}
	get("maint", "/")
	tr.Breaker("maint").ForceOpen()
	for i := range 20 {
		get(fmt.Sprint("down", i), "/500")
		require.LessOrEqual(t, tr.Hosts(), 4)
		b := tr.Breaker("maint")
		require.NotNil(t, b, "the breaker forced open was dropped for host down%d, while open ones were held", i)
		require.Equal(t, Open, b.State())
	}
}
