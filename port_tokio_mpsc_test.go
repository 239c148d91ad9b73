package ctxsync_test

// The tests of this file are the bounded-channel tests of tokio's sync::mpsc
// (tokio/tests/sync_mpsc.rs), re-expressed against Queue, one Go test per
// tokio test, named after it. send() is Put, try_send() TryPut, recv() Get,
// try_recv() TryGet, the receiver's len() and is_empty() are Len; a future
// polled and pending, then dropped, is a call in a goroutine of the bubble
// whose ctx is then ended (see tkTask in port_tokio_semaphore_test.go).
// tokio's paused clock is a bubble's.
//
// Where our contract differs by design:
//
//   - A Queue has no sender and receiver handles. Dropping every sender is
//     Close: Get drains the items left, then fails with ErrClosed (recv's
//     None). Dropping the receiver is CloseNow, which hands back the items
//     left instead of dropping them (dropping_rx_closes_channel,
//     dropping_rx_closes_channel_for_try). rx.close() is Close too.
//   - reserve() has no counterpart: room is taken by the Put that fills it.
//     The tests that use reserve only to wait for room (reserve_disarm,
//     start_send_past_cap, send_recv_buffer_limited, recv_close_gets_none_reserved,
//     permit_available_not_acquired_close) wait in Put; the parts about a
//     permit held across a close, or dropped unused, are left out.
//   - buffer_gteq_one: a capacity of 0 means unbounded; a negative one
//     panics.
//   - TryGet reports only whether it took an item: a closed, empty queue
//     and an open, empty one look the same to it (tokio's Disconnected and
//     Empty); Get tells them apart with ErrClosed.
//   - A Put after Close fails at once with ErrClosed, even with a timeout
//     (recv_timeout); the item is not kept.
//   - test_tx_capacity: the free room, tokio's capacity(), is Cap()-Len();
//     max_capacity() is Cap().
//
// Skipped, with no counterpart:
//
//   - The unbounded channel's tests: a Queue of capacity 0 is unbounded, but
//     the port is of the bounded channel.
//   - async_send_recv_many_with_buffer, send_recv_many_bounded_capacity:
//     no recv_many (a loop of TryGet is the caller's).
//   - reserve_many_above_cap, try_reserve_many_zero, reserve_many_zero,
//     try_reserve_many_edge_cases, try_reserve_fails, reserve_many_and_send,
//     try_reserve_many_and_send, reserve_many_on_closed_channel,
//     try_reserve_many_on_closed_channel, try_reserve_many_full,
//     drop_permit_releases_permit, drop_permit_iterator_releases_permits,
//     ready_close_cancel_bounded: about reserved permits only.
//   - unconsumed_messages_are_dropped, drop_all_elements_during_panic: the
//     garbage collector's business, and Go runs no destructors.
//   - blocking_recv, blocking_send, blocking_recv_async,
//     blocking_send_async, recv_timeout_panic: Go has no separate blocking
//     and async calls, and no runtime to be missing.
//   - The test_rx_is_closed_* cases: a Queue has no IsClosed; Get's
//     ErrClosed says it once the queue is also empty.
//   - The Send/UnwindSafe assertions and no_t_bounds_buffer's Debug:
//     Go has no such bounds (the Clone part is ported).

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

func tkPut[T any](q *ctxsync.Queue[T], v T) func(context.Context) error {
	return func(ctx context.Context) error { return q.Put(ctx, v) }
}

func tkGet[T any](q *ctxsync.Queue[T]) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) { return q.Get(ctx) }
}

// tkDrained fails t unless q yields want with Get, in order, then ErrClosed.
func tkDrained[T any](t *testing.T, q *ctxsync.Queue[T], want ...T) {
	t.Helper()
	for _, w := range want {
		v, err := q.Get(context.Background())
		require.NoError(t, err)
		require.Equal(t, w, v)
	}
	_, err := q.Get(context.Background())
	require.Equal(t, ctxsync.ErrClosed, err)
}

func TestPortTokioQueueSendRecvWithBuffer(t *testing.T) {
	q := ctxsync.NewQueue[int](16)
	require.NoError(t, q.Put(context.Background(), 1))
	require.True(t, q.TryPut(2))
	q.Close()
	tkDrained(t, q, 1, 2)
}

// reserve_disarm: waiting producers go in as room is made, one per Get, in
// the order they came.
func TestPortTokioQueueReserveDisarm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](2)
		require.NoError(t, q.Put(t.Context(), 1))
		require.NoError(t, q.Put(t.Context(), 2))
		p3 := tkSpawn(tkPut(q, 3))
		p3.pending(t, "Put(3), full")
		p4 := tkSpawn(tkPut(q, 4))
		p4.pending(t, "Put(4), full")

		v, err := q.Get(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, v)
		_, err = p3.ready(t, "Put(3)")
		require.NoError(t, err)
		p4.pending(t, "Put(4), full again")

		v, err = q.Get(t.Context())
		require.NoError(t, err)
		require.Equal(t, 2, v)
		_, err = p4.ready(t, "Put(4)")
		require.NoError(t, err)

		p1 := tkSpawn(tkPut(q, 5))
		p1.pending(t, "Put(5), full")
		_, err = p1.drop(t, "Put(5)")
		require.Equal(t, context.Canceled, err)
		q.Close()
		tkDrained(t, q, 3, 4)
	})
}

func TestPortTokioQueueSendRecvStreamWithBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](16)
		go func() {
			for _, v := range []int{1, 2} {
				if err := q.Put(context.Background(), v); err != nil {
					t.Errorf("Put = %v, want nil", err)
				}
			}
			q.Close()
		}()
		var got []int
		for v := range q.All(t.Context()) {
			got = append(got, v)
		}
		require.Equal(t, []int{1, 2}, got)
	})
}

func TestPortTokioQueueAsyncSendRecvWithBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](16)
		go func() {
			for _, v := range []int{1, 2} {
				if err := q.Put(context.Background(), v); err != nil {
					t.Errorf("Put = %v, want nil", err)
				}
			}
			q.Close()
		}()
		tkDrained(t, q, 1, 2)
	})
}

// start_send_past_cap: a producer that gives up while it waits for room
// hands its turn to the next one, and its item never enters the queue.
func TestPortTokioQueueStartSendPastCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[string](1)
		require.True(t, q.TryPut("first"))
		r1 := tkSpawn(tkPut(q, "dropped"))
		r1.pending(t, "the first Put, full")
		r2 := tkSpawn(tkPut(q, "second"))
		r2.pending(t, "the second Put, full")

		_, err := r1.drop(t, "the first Put")
		require.Equal(t, context.Canceled, err)
		require.Equal(t, 1, q.Putters())
		v, err := q.Get(t.Context())
		require.NoError(t, err)
		require.Equal(t, "first", v)
		_, err = r2.ready(t, "the second Put")
		require.NoError(t, err)

		q.Close()
		tkDrained(t, q, "second")
	})
}

func TestPortTokioQueueBufferGteqOne(t *testing.T) {
	require.PanicsWithValue(t, "ctxsync: NewQueue with negative capacity",
		func() { ctxsync.NewQueue[int](-1) })
	q := ctxsync.NewQueue[int](0)
	for i := range 100 {
		require.True(t, q.TryPut(i), "a queue of capacity 0 is unbounded")
	}
	require.Equal(t, 0, q.Cap())
}

func TestPortTokioQueueNoTBoundsBuffer(t *testing.T) {
	type noImpls struct{}
	q := ctxsync.NewQueue[noImpls](100)
	require.True(t, q.TryPut(noImpls{}))
	_, err := q.Get(context.Background())
	require.NoError(t, err)
}

func TestPortTokioQueueSendRecvBufferLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](1)
		require.NoError(t, q.Put(t.Context(), 1))
		p2 := tkSpawn(tkPut(q, 2))
		p2.pending(t, "Put(2), full")
		v, err := q.Get(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, v)
		_, err = p2.ready(t, "Put(2)")
		require.NoError(t, err)
		require.False(t, q.TryPut(1337), "TryPut, full with 2")
		v, err = q.Get(t.Context())
		require.NoError(t, err)
		require.Equal(t, 2, v)
	})
}

func TestPortTokioQueueRecvCloseGetsNoneIdle(t *testing.T) {
	q := ctxsync.NewQueue[int](10)
	q.Close()
	_, err := q.Get(context.Background())
	require.Equal(t, ctxsync.ErrClosed, err)
	require.Equal(t, ctxsync.ErrClosed, q.Put(context.Background(), 1))
}

// recv_close_gets_none_reserved: a producer waiting for room when the queue
// closes is refused; the item already in is still drained.
func TestPortTokioQueueRecvCloseGetsNoneReserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](1)
		require.NoError(t, q.Put(t.Context(), 123))
		p2 := tkSpawn(tkPut(q, 2))
		p2.pending(t, "Put(2), full")
		q.Close()
		_, err := p2.ready(t, "Put(2)")
		require.Equal(t, ctxsync.ErrClosed, err)
		tkDrained(t, q, 123)
	})
}

// A consumer waiting on an empty queue when it closes gets ErrClosed (the
// pending recv of recv_close_gets_none_reserved, with nothing left to send
// it).
func TestPortTokioQueueRecvCloseWakesGetter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](1)
		g := tkSpawnV(tkGet(q))
		g.pending(t, "Get, empty")
		q.Close()
		_, err := g.ready(t, "Get")
		require.Equal(t, ctxsync.ErrClosed, err)
	})
}

func TestPortTokioQueueTxCloseGetsNone(t *testing.T) {
	q := ctxsync.NewQueue[int](10)
	q.Close()
	tkDrained(t, q)
}

func TestPortTokioQueueTrySendFail(t *testing.T) {
	q := ctxsync.NewQueue[string](1)
	require.True(t, q.TryPut("hello"))
	require.False(t, q.TryPut("fail"), "TryPut, full")
	v, err := q.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, "hello", v)
	require.True(t, q.TryPut("goodbye"))
	q.Close()
	tkDrained(t, q, "goodbye")
}

func TestPortTokioQueueTrySendFailWithTryRecv(t *testing.T) {
	q := ctxsync.NewQueue[string](1)
	require.True(t, q.TryPut("hello"))
	require.False(t, q.TryPut("fail"))
	v, ok := q.TryGet()
	require.True(t, ok)
	require.Equal(t, "hello", v)
	require.True(t, q.TryPut("goodbye"))
	q.Close()
	v, ok = q.TryGet()
	require.True(t, ok)
	require.Equal(t, "goodbye", v)
	_, ok = q.TryGet()
	require.False(t, ok)
	tkDrained(t, q) // Disconnected, as Get tells it
}

// dropping_rx_closes_channel: CloseNow hands back the item left, and Put
// fails from then on.
func TestPortTokioQueueDroppingRxClosesChannel(t *testing.T) {
	q := ctxsync.NewQueue[*int](100)
	msg := new(int)
	require.True(t, q.TryPut(msg))
	require.Equal(t, []*int{msg}, q.CloseNow())
	require.Equal(t, ctxsync.ErrClosed, q.Put(context.Background(), msg))
	require.Equal(t, 0, q.Len(), "the refused item is kept")
}

func TestPortTokioQueueDroppingRxClosesChannelForTry(t *testing.T) {
	q := ctxsync.NewQueue[*int](100)
	msg := new(int)
	require.True(t, q.TryPut(msg))
	require.Equal(t, []*int{msg}, q.CloseNow())
	require.False(t, q.TryPut(msg))
	require.Equal(t, 0, q.Len())
}

// permit_available_not_acquired_close: a producer that waits when the queue
// closes is refused even if room came just before; the consumer then finds
// the queue closed once it has drained what was put.
func TestPortTokioQueuePermitAvailableNotAcquiredClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](1)
		require.True(t, q.TryPut(1))
		p2 := tkSpawn(tkPut(q, 2))
		p2.pending(t, "Put(2), full")
		q.Close()
		_, err := p2.ready(t, "Put(2)")
		require.Equal(t, ctxsync.ErrClosed, err)
		tkDrained(t, q, 1)
	})
}

func TestPortTokioQueueTryRecvBounded(t *testing.T) {
	q := ctxsync.NewQueue[string](5)
	put := func(n int) {
		t.Helper()
		for range n {
			require.True(t, q.TryPut("hello"))
		}
	}
	get := func(n int) {
		t.Helper()
		for range n {
			v, ok := q.TryGet()
			require.True(t, ok)
			require.Equal(t, "hello", v)
		}
	}
	put(5)
	require.False(t, q.TryPut("hello"), "TryPut, full")
	get(5)
	_, ok := q.TryGet()
	require.False(t, ok, "TryGet, empty")

	put(4)
	get(1)
	put(2)
	require.False(t, q.TryPut("hello"), "TryPut, full")
	get(5)
	_, ok = q.TryGet()
	require.False(t, ok)

	put(3)
	q.Close()
	get(3)
	_, ok = q.TryGet()
	require.False(t, ok)
	tkDrained(t, q)
}

func TestPortTokioQueueTryRecvAfterReceiverClose(t *testing.T) {
	q := ctxsync.NewQueue[struct{}](5)
	_, ok := q.TryGet()
	require.False(t, ok)
	q.Close()
	_, ok = q.TryGet()
	require.False(t, ok)
	tkDrained(t, q)
}

func TestPortTokioQueueTryRecvCloseWhileEmptyBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[struct{}](5)
		_, ok := q.TryGet()
		require.False(t, ok)
		g := tkSpawnV(tkGet(q))
		g.pending(t, "Get, empty and open")
		_, err := g.drop(t, "Get")
		require.Equal(t, context.Canceled, err)
		q.Close()
		tkDrained(t, q)
	})
}

// recv_timeout (tokio's send_timeout): a Put with a deadline on a full
// queue fails with DeadlineExceeded once the deadline passes, in virtual
// time; after Close it fails with ErrClosed at once.
func TestPortTokioQueueRecvTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](5)
		put := func(v int) error {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			return q.Put(ctx, v)
		}
		for _, v := range []int{10, 20, 30, 40, 50} {
			require.NoError(t, put(v))
		}
		start := time.Now()
		require.Equal(t, context.DeadlineExceeded, put(60))
		require.Equal(t, time.Second, time.Since(start))
		require.Equal(t, 0, q.Putters())
		q.Close()
		start = time.Now()
		require.Equal(t, ctxsync.ErrClosed, put(70))
		require.Zero(t, time.Since(start))
		tkDrained(t, q, 10, 20, 30, 40, 50)
	})
}

func TestPortTokioQueueTxCapacity(t *testing.T) {
	q := ctxsync.NewQueue[struct{}](10)
	require.Equal(t, 10, q.Cap()-q.Len())
	require.Equal(t, 10, q.Cap())
	require.NoError(t, q.Put(context.Background(), struct{}{}))
	require.Equal(t, 9, q.Cap()-q.Len())
	require.NoError(t, q.Put(context.Background(), struct{}{}))
	require.Equal(t, 8, q.Cap()-q.Len())
	require.Equal(t, 10, q.Cap())
}

// The test_rx_is_empty_* and test_rx_len_* cases of the bounded channel.
func TestPortTokioQueueRxLen(t *testing.T) {
	bg := context.Background()
	filled := func(n int) *ctxsync.Queue[int] {
		q := ctxsync.NewQueue[int](n)
		for i := range n {
			require.NoError(t, q.Put(bg, i))
			require.Equal(t, i+1, q.Len())
		}
		return q
	}
	t.Run("is_empty_when_no_messages_were_sent", func(t *testing.T) {
		require.Zero(t, ctxsync.NewQueue[int](10).Len())
	})
	t.Run("is_not_empty_when_there_are_messages_in_the_buffer", func(t *testing.T) {
		q := ctxsync.NewQueue[int](10)
		require.NoError(t, q.Put(bg, 0))
		require.Equal(t, 1, q.Len())
	})
	t.Run("is_not_empty_when_the_buffer_is_full", func(t *testing.T) {
		require.Equal(t, 10, filled(10).Len())
	})
	t.Run("is_not_empty_when_all_but_one_messages_are_consumed", func(t *testing.T) {
		q := filled(10)
		for range 9 {
			_, err := q.Get(bg)
			require.NoError(t, err)
		}
		require.Equal(t, 1, q.Len())
	})
	t.Run("is_empty_when_all_messages_are_consumed", func(t *testing.T) {
		q := filled(10)
		for {
			if _, ok := q.TryGet(); !ok {
				break
			}
		}
		require.Zero(t, q.Len())
	})
	t.Run("is_empty_all_senders_are_dropped_and_messages_consumed", func(t *testing.T) {
		q := filled(10)
		q.Close()
		for range 10 {
			_, err := q.Get(bg)
			require.NoError(t, err)
		}
		require.Zero(t, q.Len())
	})
	t.Run("len_on_empty_channel_without_senders", func(t *testing.T) {
		q := ctxsync.NewQueue[int](100)
		q.Close()
		require.Zero(t, q.Len())
	})
	t.Run("len_on_filled_channel_without_senders", func(t *testing.T) {
		q := filled(100)
		q.Close()
		require.Equal(t, 100, q.Len())
	})
	t.Run("len_when_consuming_all_messages", func(t *testing.T) {
		q := filled(100)
		q.Close()
		for i := 99; i >= 0; i-- {
			_, err := q.Get(bg)
			require.NoError(t, err)
			require.Equal(t, i, q.Len())
		}
	})
	t.Run("len_when_close_is_called", func(t *testing.T) {
		q := ctxsync.NewQueue[int](100)
		require.NoError(t, q.Put(bg, 0))
		q.Close()
		require.Equal(t, 1, q.Len())
	})
}

// test_is_empty_32_msgs (tokio's issue 6602): a put and a get, round after
// round, around the ring's edge, leave the queue empty every time.
func TestPortTokioQueueIsEmpty32Msgs(t *testing.T) {
	q := ctxsync.NewQueue[int](33)
	for v := 1; v < 257; v++ {
		require.NoError(t, q.Put(context.Background(), v))
		got, err := q.Get(context.Background())
		require.NoError(t, err)
		require.Equal(t, v, got)
		require.Zero(t, q.Len(), "after %d", v)
	}
}

// A consumer dropped from between two others: the items go to the others,
// in order, and none is lost.
func TestPortTokioQueueDroppedGetterFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](2)
		g0 := tkSpawnV(tkGet(q))
		g1 := tkSpawnV(tkGet(q))
		g2 := tkSpawnV(tkGet(q))
		_, err := g1.drop(t, "the second Get")
		require.Equal(t, context.Canceled, err)
		require.Equal(t, 2, q.Getters())
		_, ok := q.TryGet()
		require.False(t, ok)
		require.NoError(t, q.Put(t.Context(), 10))
		require.NoError(t, q.Put(t.Context(), 11))
		v, err := g0.ready(t, "the first Get")
		require.NoError(t, err)
		require.Equal(t, 10, v)
		v, err = g2.ready(t, "the third Get")
		require.NoError(t, err)
		require.Equal(t, 11, v)
		require.Zero(t, q.Len())
	})
}

// An item handed to a waiting consumer just before its ctx ends is kept
// (Get's doc), and room handed to a waiting producer likewise: the calls
// return nil, and nothing is lost or put twice.
func TestPortTokioQueueHandOverThenDrop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](1)
		g := tkSpawnV(tkGet(q))
		require.True(t, q.TryPut(7))
		v, err := g.drop(t, "Get")
		require.NoError(t, err)
		require.Equal(t, 7, v)
		require.Zero(t, q.Len())

		require.True(t, q.TryPut(1))
		p := tkSpawn(tkPut(q, 2))
		v, ok := q.TryGet()
		require.True(t, ok)
		require.Equal(t, 1, v)
		_, err = p.drop(t, "Put(2)")
		require.NoError(t, err)
		q.Close()
		tkDrained(t, q, 2)
	})
}
