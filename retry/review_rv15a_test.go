package retry_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// TestRV15aCheckInRoundTripsOrder: the Check of a Transport in front of a
// chain of ratelimit.Transports reports the mistake RoundTrip panics with,
// as ratelimit.Transport.Check does for the chain itself: a ratelimit.Transport
// looks at the fields of those nested right under it before it uses its
// limiter, so their mistake comes first. Check reported the outer one's zero
// limiter, which RoundTrip never reached.
func TestRV15aCheckInRoundTripsOrder(t *testing.T) {
	chain := func() *ratelimit.Transport {
		return &ratelimit.Transport{Limiter: &ratelimit.TokenBucket{}, Base: &ratelimit.Transport{}}
	}
	require.EqualError(t, chain().Check(), "ratelimit: Transport with neither Limiter nor PerHost")
	for name, tr := range map[string]checker{
		"retry":    &retry.Transport{Base: chain()},
		"adaptive": &adaptive.Transport{Limiter: adaptive.New(adaptive.Config{}), Base: chain()},
	} {
		err := tr.Check()
		require.Error(t, err, name)
		var p any
		func() {
			defer func() { p = recover() }()
			_, _ = tr.RoundTrip(httptest.NewRequest(http.MethodGet, "http://a.test/", nil))
		}()
		require.Equal(t, err.Error(), p, "%s: Check's error, RoundTrip's panic", name)
	}
}
