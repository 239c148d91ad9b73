package ctxsync

import (
	"context"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// requirePackagePanic checks that f panics with a message naming the package
// and the method called.
func requirePackagePanic(t *testing.T, what string, f func()) {
	t.Helper()
	testutil.RequirePanicPrefix(t, "ctxsync: "+what, f)
}

// A key type made of interfaces compiles with any value in it, and one that
// holds a slice cannot be compared: each method that takes a key says so in
// the package's words, and the primitive is left usable.
func TestKeyThatCannotBeCompared(t *testing.T) {
	bad := []int{1}
	ctx := context.Background()

	t.Run("Flight", func(t *testing.T) {
		var f Flight[any, int]
		fn := func(context.Context) (int, error) { return 1, nil }
		requirePackagePanic(t, "Flight.Do", func() { f.Do(ctx, bad, fn) })

		// Forget with a call in flight compares keys with the Flight's
		// mutex held: a panic there left it locked, and every later call
		// of the Flight waited for good.
		release := make(chan struct{})
		started := make(chan struct{})
		go f.Do(ctx, "in flight", func(context.Context) (int, error) {
			close(started)
			<-release
			return 1, nil
		})
		<-started
		requirePackagePanic(t, "Flight.Forget", func() { f.Forget(bad) })
		// The caller of the call in flight may hold the mutex for a moment
		// (it makes the result's channel after its yields): a mutex left
		// locked is never free again.
		for start := time.Now(); !f.mu.TryLock(); runtime.Gosched() {
			require.Less(t, time.Since(start), 10*time.Second, "Flight.Forget's panic left the Flight locked")
		}
		f.mu.Unlock()
		close(release)
		v, err, _ := f.Do(ctx, 2, fn)
		require.NoError(t, err)
		require.Equal(t, 1, v)
	})

	t.Run("KeyedLock", func(t *testing.T) {
		var k KeyedLock[any]
		requirePackagePanic(t, "KeyedLock.Lock", func() { k.Lock(ctx, bad) })
		requirePackagePanic(t, "KeyedLock.TryLock", func() { k.TryLock(bad) })
		requirePackagePanic(t, "KeyedLock.Unlock", func() { k.Unlock(bad) })
		require.NoError(t, k.Lock(ctx, 1))
		k.Unlock(1)
		require.Zero(t, k.Len())
	})
}

// A NaN key panics in every method that takes a key, and changes nothing.
func TestKeyNaN(t *testing.T) {
	nan := math.NaN()
	ctx := context.Background()
	var f Flight[float64, int]
	requirePackagePanic(t, "Flight.Do", func() {
		f.Do(ctx, nan, func(context.Context) (int, error) { return 1, nil })
	})
	require.Zero(t, f.Len())
	f.Forget(nan) // finds nothing, as for any key not in flight
	var k KeyedLock[float64]
	requirePackagePanic(t, "KeyedLock key not equal", func() { k.Lock(ctx, nan) })
	require.Zero(t, k.Len())
}
