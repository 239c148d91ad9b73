package ctxsync

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRWLockReadersAtTheTop: the count of readers has 32 bits of the state,
// the sign bit among them, which RUnlock takes for an RUnlock too many. With
// 2³¹-1 readers in, RLock and TryRLock still let more in: the count reaches
// the sign bit, and the RUnlock of a reader that holds the lock panics
// ("RUnlock of RWLock not locked for reading") and leaves the count as it
// was, so every later RUnlock down to 2³¹ readers panics too. Right: past a
// limit below the sign bit, a reader waits until one leaves (TryRLock
// fails), and every reader in can RUnlock. (Before the count of writers'
// releases shared the state, the readers had 62 bits.)
func TestRWLockReadersAtTheTop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw RWLock
		const many = 1<<31 - 1
		rw.state.Store(many * rwReader) // readers in, by RLock or TryRLock

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		var in int
		if rw.TryRLock() {
			in++
		}
		done := make(chan error, 1)
		go func() { done <- rw.RLock(ctx) }()
		synctest.Wait()
		if err := <-done; err == nil { // or it waits until ctx ends
			in++
		} else {
			require.Equal(t, context.DeadlineExceeded, err)
		}
		for i := range in + 1 { // the readers let in, and one of the many
			require.NotPanics(t, rw.RUnlock, "RUnlock %d of %d by readers that hold the lock", i+1, in+1)
		}
		require.Equal(t, int64(many-1), readers(rw.state.Load()))
		require.Zero(t, rw.Waiting())
	})
}

// TestRWLockMostReaders: with rwMaxReaders readers in, TryRLock fails, RLock
// waits, and enters when a reader leaves; a writer queued behind it waits for
// all of them.
func TestRWLockMostReaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rw RWLock
		rw.state.Store(rwMaxReaders * rwReader)
		require.False(t, rw.TryRLock())
		reader := make(chan error, 1)
		go func() { reader <- rw.RLock(t.Context()) }()
		synctest.Wait()
		require.Empty(t, reader)
		writer := make(chan error, 1)
		go func() { writer <- rw.Lock(t.Context()) }()
		synctest.Wait()
		require.Equal(t, 2, rw.Waiting())
		rw.RUnlock()
		synctest.Wait()
		require.NoError(t, <-reader)
		require.Empty(t, writer)
		require.Equal(t, int64(rwMaxReaders), readers(rw.state.Load()))
		rw.state.Add(-(rwMaxReaders - 1) * rwReader) // all but one leave
		rw.RUnlock()
		require.NoError(t, <-writer)
		rw.Unlock()
		require.True(t, rw.TryLock())
		rw.Unlock()
	})
}
