package ctxsync

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestRWLockPhantomReader drives the window in which a reader's fast path has
// counted itself but not yet found the writer queued ahead of it: the last
// real reader leaves then, and cannot hand over to the writer, since the
// count is not zero. The phantom, leaving, must hand over instead.
func TestRWLockPhantomReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw RWLock
		require.NoError(t, rw.RLock(t.Context()))
		writer := make(chan error, 1)
		go func() { writer <- rw.Lock(t.Context()) }()
		synctest.Wait() // queued behind the reader

		rw.state.Add(rwReader) // a reader's fast path, about to find the writer
		rw.RUnlock()           // the real reader leaves; the phantom holds the writer back
		synctest.Wait()
		require.Empty(t, writer)

		reader := make(chan error, 1)
		go func() { reader <- rw.rlockSlow(t.Context()) }() // the phantom's slow path
		require.NoError(t, <-writer, "the writer was left waiting")
		synctest.Wait()
		require.Empty(t, reader, "a reader overtook the writer")
		rw.Unlock()
		require.NoError(t, <-reader)
		rw.RUnlock()
		require.True(t, rw.TryLock())
		rw.Unlock()
	})
}
