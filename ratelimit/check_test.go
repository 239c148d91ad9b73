package ratelimit

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTransportCheck: Check returns, as an error, each mistake RoundTrip
// panics with, and nil for a Transport that works.
func TestTransportCheck(t *testing.T) {
	keyed := NewKeyed(func(string) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	key := func(*http.Request) string { return "k" }
	require.NoError(t, (&Transport{Limiter: NewTokenBucket(1, 1)}).Check())
	require.NoError(t, (&Transport{PerHost: keyed, Key: key}).Check())
	for _, tr := range []*Transport{
		{},
		{Limiter: NewTokenBucket(1, 1), PerHost: keyed},
		{Limiter: NewTokenBucket(1, 1), Key: key},
		{Limiter: (*TokenBucket)(nil)},
	} {
		err := tr.Check()
		require.Error(t, err)
		req, _ := http.NewRequest(http.MethodGet, "http://a.test/", nil)
		require.PanicsWithValue(t, err.Error(), func() { _, _ = tr.RoundTrip(req) })
	}
}
