package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync"
)

// A ctx whose Done channel was made in a testing/synctest bubble (a Group's,
// made in a bubble and used after it, say) cannot be read through that
// channel outside the bubble: the runtime ends the program. Its Err can be
// read. The calls that need not wait must work with such a ctx after the
// bubble, as they did before they were taught to read Done: they look at
// ctx with Err.
func TestFastPathsWithACtxFromABubble(t *testing.T) {
	var ctx context.Context
	var cancel context.CancelFunc // never called: it would close the channel outside the bubble
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel = context.WithCancel(context.Background())
		_ = ctx.Done() // the channel is made now, in the bubble
	})
	_ = cancel
	s := ctxsync.NewSemaphore(1)
	if err := s.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	s.Release()
	w := ctxsync.NewWeighted(2)
	if err := w.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w.Release(1)
	rw := ctxsync.NewRWLock()
	if err := rw.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	rw.RUnlock()
	if err := rw.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	rw.Unlock()
	l := ctxsync.NewLock()
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
}
