package ratelimit

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// Regression: a key of an interface type that holds a value that cannot be
// compared panicked with "ratelimit: Keyed with a key ...", naming no
// method, where the documentation (and Flight's and KeyedLock's panics)
// name the method called. Each method names itself, as its panic for a bad
// n does (Allow and a handle's AllowN as AllowN, which they are).
func TestKeyedUncomparableKeyNamesTheMethod(t *testing.T) {
	k := NewKeyed(func(any) *TokenBucket { return NewTokenBucket(1, 1) }, KeyedConfig{})
	bad := []int{1}
	for _, c := range []struct {
		method string
		call   func()
	}{
		{"Keyed.Get", func() { k.Get(bad) }},
		{"Keyed.AllowN", func() { k.Allow(bad) }},
		{"Keyed.AllowN", func() { k.AllowN(bad, 1) }},
		{"Keyed.WaitN", func() { _ = k.WaitN(context.Background(), bad, 1) }},
		{"Keyed.Take", func() { k.Take(bad, 1) }},
	} {
		testutil.RequirePanicPrefix(t, "ratelimit: "+c.method+" with a key that cannot be compared", c.call)
	}
	require.Zero(t, k.Len())
}
