package httpx

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// chainRT stands for one of the library's Transports in these tests.
type chainRT struct{ base http.RoundTripper }

func (*chainRT) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("chainRT sends nothing")
}

func init() {
	RegisterTransport("test", func(t *chainRT) http.RoundTripper { return t.base }, func(*chainRT) error { return nil })
}

// TestChainOver: ChainOver agrees with CheckChain on where a chain of the
// library's Transports is too long (64 in all are fine, 65 are not), finds
// a loop, and stops at the first Base that is none of them, or a nil
// pointer, or nil.
func TestChainOver(t *testing.T) {
	var base http.RoundTripper
	for n := 1; n <= MaxChain; n++ {
		base = &chainRT{base: base}
		// base is the Base of a Transport above it: 1 + n in all.
		over := 1+n > MaxChain
		require.Equal(t, over, ChainOver(base, 1), "%d in all", 1+n)
		require.Equal(t, over, CheckChain("test", base, 1) != nil, "%d in all", 1+n)
	}
	loop := &chainRT{}
	loop.base = &chainRT{base: loop}
	require.True(t, ChainOver(loop, 1))
	require.Error(t, CheckChain("test", loop, 1))

	require.False(t, ChainOver(nil, MaxChain))
	require.False(t, ChainOver(http.DefaultTransport, MaxChain))
	require.False(t, ChainOver((*chainRT)(nil), MaxChain), "a nil pointer is its Transport's mistake, not the chain's")
	require.False(t, ChainOver(&chainRT{base: (*chainRT)(nil)}, MaxChain-1))
}
