package ctxsync

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQueueCloseNowShrinksEmptyRing pins a bug of CloseNow: it fitted the
// ring to what it held only when items were left, so a ring a burst had
// grown, drained by pops that could not shrink it (each lost its try of the
// producers' lock to a Put), stayed at the burst's size for the life of the
// closed queue. CloseNow promises not to pin that memory: it fits the ring
// whether or not items are left.
func TestQueueCloseNowShrinksEmptyRing(t *testing.T) {
	q := NewQueue[int](0)
	const burst = 1024
	for i := range burst {
		require.True(t, q.TryPut(i))
	}
	grown := len(q.ring.buf)
	require.GreaterOrEqual(t, grown, burst)

	// Every pop finds the producers' lock taken, as it does while Puts
	// run, and so leaves the ring at its size.
	q.putMu.Lock()
	for i := range burst {
		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, i, v)
	}
	q.putMu.Unlock()
	require.Equal(t, grown, len(q.ring.buf), "the pops could not shrink the ring")

	require.Empty(t, q.CloseNow())
	require.LessOrEqual(t, len(q.ring.buf), storeMinShrink, "ring left at %d slots by CloseNow of an empty queue", len(q.ring.buf))
}
