package ctxsync

import (
	"context"
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

// TestRWLockReleaseCountWraps: the count of writers' releases wraps within its
// bits, leaving the readers and the flags alone, and RLock's one look still
// tells a writer's release across the wrap.
func TestRWLockReleaseCountWraps(t *testing.T) {
	top := int64(rwReleases) // the count at its largest
	require.Equal(t, int64(0), released(top|rwWriter), "wraps to zero")
	require.Equal(t, int64(3*rwReader|rwWaiters), released(3*rwReader|top|rwWaiters|rwWriter), "readers and waiters kept")

	var rw RWLock
	rw.state.Store(top)
	require.NoError(t, rw.Lock(context.Background()))
	rw.Unlock()
	require.Zero(t, rw.state.Load(), "unlocked, the count wrapped")
	require.NoError(t, rw.RLock(context.Background()))
	require.False(t, rw.TryLock())
	rw.RUnlock()

	// A writer in and out between the look and the take, across the wrap,
	// with the ctx ended meanwhile: the count differs, the reader looks again.
	rw.state.Store(top)
	inner, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &onceErrCtx{Context: inner, hook: func() {
		cancel()
		require.True(t, rw.TryLock())
		rw.Unlock()
	}}
	require.Equal(t, context.Canceled, rw.RLock(ctx))
	require.True(t, rw.TryLock(), "given back")
	rw.Unlock()
}

// onceErrCtx runs hook at its first Err call, after reading the error.
type onceErrCtx struct {
	context.Context
	ran  bool
	hook func()
}

func (c *onceErrCtx) Err() error {
	err := c.Context.Err()
	if !c.ran {
		c.ran = true
		c.hook()
	}
	return err
}
