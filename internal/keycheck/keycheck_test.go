package keycheck

import (
	"hash/maphash"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// requireRaised checks that f panics with a message led by "p: M" and
// naming the trouble (the runtime's words for it differ between releases).
func requireRaised(t *testing.T, f func()) {
	t.Helper()
	testutil.RequirePanicPrefix(t, "p: M with a key that cannot be compared (", f)
}

func TestEqual(t *testing.T) {
	require.True(t, Equal(1, "p: M"))
	require.False(t, Equal(math.NaN(), "p: M"))
	require.True(t, Equal[any]("a", "p: M"))
	require.False(t, Equal[any](math.NaN(), "p: M"))
	requireRaised(t, func() { Equal[any]([]int{1}, "p: M") })
}

func TestHash(t *testing.T) {
	seed := maphash.MakeSeed()
	require.Equal(t, maphash.Comparable(seed, "a"), Hash(seed, "a", "p: M"))
	require.Equal(t, maphash.Comparable[any](seed, "a"), Hash[any](seed, "a", "p: M"))
	requireRaised(t, func() { Hash[any](seed, map[int]int{}, "p: M") })
}

// An interface type of the user's is an interface type too.
func TestUserInterface(t *testing.T) {
	type named interface{ Name() string }
	require.True(t, isInterface[named]())
	require.True(t, isInterface[any]())
	require.False(t, isInterface[struct{ v any }]())
	require.False(t, isInterface[*int]())
	require.False(t, isInterface[string]())
}
