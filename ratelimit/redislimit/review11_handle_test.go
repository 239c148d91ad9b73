package redislimit

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Regression: a Handle's misuse panicked with the name of a Limiter method
// the caller never called: h.AllowN(0) said "redislimit: Take with n = 0",
// which sends a reader of the panic to the wrong call (Limiter.Take is the
// KeyTaker of Middleware). As TestAllowNMisuseNamesTheMethod pins for the
// Limiter, a panic names the method called: Handle.AllowN, Handle.Take,
// Handle.WaitN.
func TestReview11HandleMisuseNamesTheMethod(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	l, err := New(Config{Client: c, Rate: 1, Burst: 1})
	require.NoError(t, err)
	h := l.For("k")
	require.PanicsWithValue(t, "redislimit: Handle.AllowN with n = 0; n must be at least 1", func() { h.AllowN(0) })
	require.PanicsWithValue(t, "redislimit: Handle.Take with n = -1; n must be at least 1", func() { h.Take(-1) })
	require.PanicsWithValue(t, "redislimit: Handle.WaitN with n = 0; n must be at least 1", func() { _ = h.WaitN(context.Background(), 0) })
}
