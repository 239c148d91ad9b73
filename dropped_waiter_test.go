package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// cxW starts call in a goroutine with its own ctx and lets it block.
type cxW struct {
	cancel context.CancelFunc
	res    chan error
}

func cxStart(call func(context.Context) error) *cxW {
	ctx, cancel := context.WithCancel(context.Background())
	w := &cxW{cancel, make(chan error, 1)}
	go func() { w.res <- call(ctx) }()
	synctest.Wait()
	return w
}

func (w *cxW) err() error { e := <-w.res; w.cancel(); return e }

func cxBubble(t *testing.T, f func(t *testing.T)) {
	testutil.OneProcessor(t)
	synctest.Test(t, f)
}

func TestDroppedWaiterWeighted(t *testing.T) {
	cxBubble(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(4)
		require.NoError(t, w.Acquire(t.Context(), 4))
		a := cxStart(acquireOf(w, 3))
		b := cxStart(acquireOf(w, 1))
		c := cxStart(acquireOf(w, 2))
		a.cancel()
		w.Release(1) // drops a, grants b
		require.Equal(t, context.Canceled, a.err())
		require.NoError(t, b.err())
		c.cancel()
		w.Release(3)
		require.Equal(t, context.Canceled, c.err())
		require.Equal(t, int64(3), w.Available())
		require.Equal(t, 0, w.Waiting())
		w.Release(1)
		require.True(t, w.TryAcquire(4))
		w.Release(4)
	})
}

func TestDroppedWaiterWeightedResize(t *testing.T) {
	cxBubble(t, func(t *testing.T) {
		w := ctxsync.NewWeighted(4)
		require.NoError(t, w.Acquire(t.Context(), 4))
		a := cxStart(acquireOf(w, 4))
		b := cxStart(acquireOf(w, 2))
		d := cxStart(acquireOf(w, 3))
		a.cancel()
		w.Resize(2) // a's ctx ended: Canceled, not ErrExceedsCapacity; d is too large
		require.Equal(t, context.Canceled, a.err())
		require.ErrorIs(t, d.err(), ctxsync.ErrExceedsCapacity)
		require.Equal(t, int64(-2), w.Available())
		b.cancel()
		w.Release(4)
		require.Equal(t, context.Canceled, b.err())
		require.Equal(t, int64(2), w.Available())
		require.Equal(t, 0, w.Waiting())
		w.Resize(4)
		require.True(t, w.TryAcquire(4))
	})
}

func TestDroppedWaiterLock(t *testing.T) {
	cxBubble(t, func(t *testing.T) {
		var l ctxsync.Lock
		require.NoError(t, l.Lock(t.Context()))
		a := cxStart(l.Lock)
		b := cxStart(l.Lock)
		c := cxStart(l.Lock)
		a.cancel()
		c.cancel()
		l.Unlock() // drops a, grants b
		require.Equal(t, context.Canceled, a.err())
		require.NoError(t, b.err())
		require.Equal(t, context.Canceled, c.err())
		l.Unlock()
		require.False(t, l.Locked())
		require.True(t, l.TryLock())
		l.Unlock()
	})
}

func TestDroppedWaiterRWLock(t *testing.T) {
	cxBubble(t, func(t *testing.T) {
		var rw ctxsync.RWLock
		require.NoError(t, rw.Lock(t.Context()))
		w1 := cxStart(rw.Lock)
		r2 := cxStart(rw.RLock)
		r3 := cxStart(rw.RLock)
		w4 := cxStart(rw.Lock)
		r5 := cxStart(rw.RLock)
		w6 := cxStart(rw.Lock)
		w1.cancel()
		w4.cancel()
		rw.Unlock()
		require.Equal(t, context.Canceled, w1.err())
		require.Equal(t, context.Canceled, w4.err())
		require.NoError(t, r2.err())
		require.NoError(t, r3.err())
		require.NoError(t, r5.err(), "the reader behind a writer that gave up enters with the others")
		rw.RUnlock()
		rw.RUnlock()
		w6.cancel() // as the last reader leaves
		rw.RUnlock()
		require.Equal(t, context.Canceled, w6.err())
		require.True(t, rw.TryLock())
		rw.Unlock()
		require.True(t, rw.TryRLock())
		rw.RUnlock()
	})
}

func TestDroppedWaiterSemaphoreOwed(t *testing.T) {
	for _, k := range semaphoreKinds {
		t.Run(k.name, func(t *testing.T) {
			cxBubble(t, func(t *testing.T) {
				s := k.new(1)
				require.NoError(t, s.Acquire(t.Context()))
				a := cxStart(s.Acquire)
				b := cxStart(s.Acquire)
				a.cancel()
				b.cancel()
				s.Release() // drops both: the permit is owed
				d := cxStart(s.Acquire)
				require.NoError(t, d.err(), "the owed permit goes to a newcomer")
				require.Equal(t, context.Canceled, a.err())
				require.Equal(t, context.Canceled, b.err())
				require.Equal(t, 0, s.Available())
				require.Equal(t, 0, s.Waiting())
				e := cxStart(s.Acquire)
				s.Release()
				require.NoError(t, e.err())
				s.Release()
				require.Equal(t, 1, s.Available())
				require.True(t, s.TryAcquire())
				require.False(t, s.TryAcquire())
				s.Release()
			})
		})
	}
}

func TestDroppedWaiterQueues(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		cxBubble(t, func(t *testing.T) {
			q := newQ(1)
			get := func(ctx context.Context) error { _, err := q.Get(ctx); return err }
			g1 := cxStart(get)
			g2 := cxStart(get)
			g1.cancel()
			require.True(t, q.TryPut(7))
			require.Equal(t, context.Canceled, g1.err())
			require.NoError(t, g2.err())
			require.True(t, q.TryPut(1))
			p1 := cxStart(func(ctx context.Context) error { return q.Put(ctx, 2) })
			p2 := cxStart(func(ctx context.Context) error { return q.Put(ctx, 3) })
			p1.cancel()
			v, ok := q.TryGet()
			require.True(t, ok)
			require.Equal(t, 1, v)
			require.Equal(t, context.Canceled, p1.err())
			require.NoError(t, p2.err())
			v, ok = q.TryGet()
			require.True(t, ok)
			require.Equal(t, 3, v)
			g3 := cxStart(get)
			g3.cancel()
			q.Close()
			require.Error(t, g3.err())
			_, err := q.Get(t.Context())
			require.ErrorIs(t, err, ctxsync.ErrClosed)
			require.False(t, q.TryPut(9))
			require.Zero(t, q.Len())
		})
	})
}
