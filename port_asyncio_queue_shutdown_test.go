package ctxsync_test

// A port of the shutdown tests of CPython's asyncio queues
// (_QueueShutdownTestMixin in Lib/test/test_asyncio/test_queues.py, Python
// 3.13 and later) to Queue and PriorityQueue, which the peer runs for its
// Queue and its PriorityQueue alike; then the queues used with the group
// package as the README suggests, shut down, with every item accounted for.
//
// Where asyncio differs from ctxsync by design:
//   - shutdown(immediate=False) is Close; shutdown(immediate=True) is
//     CloseNow, which returns the items it takes out instead of dropping
//     them. Both count those items done, so Join behaves alike.
//   - QueueShutDown is ErrClosed. get_nowait and put_nowait raise it on a
//     shut-down queue; TryGet and TryPut return false, as they do on an empty
//     or full queue.
//   - test_format: no format string; a refused TryPut shows the queue closed.
//
// Skipped, with no counterpart: LifoQueueShutdownTests (no LIFO queue).

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// requireShutDown checks that every way in and out of q is refused, as it is
// once q is closed and empty.
func requireShutDown(t *testing.T, q pyQueue) {
	t.Helper()
	ctx := context.Background()
	require.ErrorIs(t, q.Put(ctx, 9), ctxsync.ErrClosed, "Put on a closed queue")
	require.False(t, q.TryPut(9), "TryPut on a closed queue")
	_, err := q.Get(ctx)
	require.ErrorIs(t, err, ctxsync.ErrClosed, "Get on a closed, empty queue")
	_, ok := q.TryGet()
	require.False(t, ok, "TryGet on a closed, empty queue")
}

func TestPortAsyncioQueueShutdownFormat(t *testing.T) {
	forEachPyQueue(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		q.Close()
		require.Equal(t, 0, q.Cap())
		require.False(t, q.TryPut(1), "TryPut on a closed queue")
	})
}

func TestPortAsyncioQueueShutdownEmpty(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		get := getAsync(context.Background(), q)
		synctest.Wait() // the Get waits before the close

		q.Close()
		require.Equal(t, 0, q.Len())
		require.NoError(t, q.Join(context.Background()))
		synctest.Wait()
		require.False(t, stillWaiting(get), "Get still waits on a closed, empty queue")
		require.ErrorIs(t, (<-get).err, ctxsync.ErrClosed)
		requireShutDown(t, q)
	})
}

func TestPortAsyncioQueueShutdownNonempty(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		bg := context.Background()
		q := newQ(1)
		require.True(t, q.TryPut(1))
		join := make(chan error, 1)
		go func() { join <- q.Join(bg) }()
		put := putAsync(bg, q, 2)
		synctest.Wait()
		require.True(t, stillWaiting(put), "Put into a full queue returned")

		q.Close()
		require.Equal(t, 1, q.Len(), "Close took the item out")
		synctest.Wait()
		require.False(t, stillWaiting(put), "Put still waits on a closed queue")
		require.ErrorIs(t, <-put, ctxsync.ErrClosed)

		v, err := q.Get(bg)
		require.NoError(t, err, "Get drains a closed queue")
		require.Equal(t, 1, v)
		synctest.Wait()
		require.True(t, stillWaiting(join), "Join returned with an item taken and not done")
		requireShutDown(t, q)

		q.TaskDone()
		synctest.Wait()
		require.False(t, stillWaiting(join), "Join waits with every item done")
		require.NoError(t, <-join)
		testutil.RequirePanicPrefix(t, "ctxsync: ", q.TaskDone)
	})
}

func TestPortAsyncioQueueShutdownImmediate(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(0)
		require.True(t, q.TryPut(1))
		join := make(chan error, 1)
		go func() { join <- q.Join(context.Background()) }()
		synctest.Wait()

		require.Equal(t, []int{1}, q.CloseNow())
		require.Equal(t, 0, q.Len())
		synctest.Wait()
		require.False(t, stillWaiting(join), "Join waits for an item CloseNow handed back")
		require.NoError(t, <-join)
		requireShutDown(t, q)
		testutil.RequirePanicPrefix(t, "ctxsync: ", q.TaskDone)
	})
}

func TestPortAsyncioQueueShutdownImmediateWithUnfinished(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		bg := context.Background()
		q := newQ(0)
		require.True(t, q.TryPut(1))
		require.True(t, q.TryPut(2))
		join := make(chan error, 1)
		go func() { join <- q.Join(bg) }()
		v, err := q.Get(bg)
		require.NoError(t, err)
		require.Equal(t, 1, v)

		require.Equal(t, []int{2}, q.CloseNow())
		require.Equal(t, 0, q.Len())
		synctest.Wait()
		require.True(t, stillWaiting(join), "Join returned with an item taken and not done")
		requireShutDown(t, q)

		require.Equal(t, 1, q.Unfinished())
		q.TaskDone()
		testutil.RequirePanicPrefix(t, "ctxsync: ", q.TaskDone)
		synctest.Wait()
		require.False(t, stillWaiting(join), "Join waits with every item done")
		require.NoError(t, <-join)
	})
}

// ledger records, for a shutdown test, what became of each item: accepted
// by a Put, processed by a consumer, handed back by CloseNow.
type ledger struct {
	mu                              sync.Mutex
	accepted, processed, handedBack map[int]int
}

func newLedger() *ledger {
	return &ledger{accepted: map[int]int{}, processed: map[int]int{}, handedBack: map[int]int{}}
}

func (l *ledger) add(m map[int]int, v int) {
	l.mu.Lock()
	m[v]++
	l.mu.Unlock()
}

// check fails t unless every item accepted was processed or handed back,
// once, and nothing else was.
func (l *ledger) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for v := range l.accepted {
		if n := l.processed[v] + l.handedBack[v]; n != 1 {
			t.Errorf("item %d accepted, then processed %d times and handed back %d times; want once in all",
				v, l.processed[v], l.handedBack[v])
		}
	}
	for _, m := range []map[int]int{l.processed, l.handedBack} {
		for v := range m {
			if l.accepted[v] == 0 {
				t.Errorf("item %d came out, and no Put accepted it", v)
			}
		}
	}
}

// TestPortAsyncioQueueShutdownForEach: producers in a group put into a
// bounded queue while group.ForEach drains it over q.All, as ForEach's doc
// shows; at a random moment the pull stops, CloseNow hands back what is
// queued and Join waits for the items in hand. Every item a Put accepted is
// then processed or handed back, once; no refused item comes out; Join
// returns; nothing is left unfinished.
func TestPortAsyncioQueueShutdownForEach(t *testing.T) {
	for seed := range uint64(testutil.HammerRounds(12)) {
		inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
			rng := rand.New(rand.NewPCG(seed, 11))
			var rmu sync.Mutex
			randDur := func(max time.Duration) time.Duration {
				rmu.Lock()
				defer rmu.Unlock()
				return time.Duration(rng.Int64N(int64(max)))
			}
			q := newQ(4)
			l := newLedger()

			producers, _ := group.New(context.Background(), group.Options{})
			for p := range 3 {
				_ = producers.Go(func(context.Context) error {
					for i := range 20 {
						v := p*100 + i
						err := q.Put(context.Background(), v)
						if err != nil {
							assert.ErrorIs(t, err, ctxsync.ErrClosed)
							return nil
						}
						l.add(l.accepted, v)
						time.Sleep(randDur(3 * time.Millisecond))
					}
					return nil
				})
			}

			// On odd seeds, ForEach's own ctx is the pull's, as q.All(ctx)
			// with ctx ending at the shutdown: an item handed to All as it
			// ends goes to f with its ctx done, and f still finishes it.
			pull, stop := context.WithCancel(context.Background())
			feCtx := context.Background()
			if seed%2 == 1 {
				feCtx = pull
			}
			consumed := make(chan error, 1)
			go func() {
				consumed <- group.ForEach(feCtx, q.All(pull), 3, func(ctx context.Context, v int) error {
					defer q.TaskDone()
					time.Sleep(randDur(5 * time.Millisecond))
					l.add(l.processed, v)
					return nil
				})
			}()

			time.Sleep(randDur(40 * time.Millisecond))
			stop()
			for _, v := range q.CloseNow() {
				l.add(l.handedBack, v)
			}
			require.NoError(t, q.Join(context.Background()), "Join after CloseNow")
			require.NoError(t, producers.Wait())
			err := <-consumed
			if err != nil {
				require.ErrorIs(t, err, context.Canceled, "ForEach")
			}
			require.Equal(t, 0, q.Unfinished())
			l.check(t)
		})
	}
}

// TestPortAsyncioQueueShutdownWorkersJoin: a fixed set of workers in a group
// ranges over q.All, as the README's graceful-shutdown example does; a
// producer puts, Join waits for every item, and Close ends the workers.
// Then, with workers whose ctx ends at a random moment and items still
// queued, CloseNow hands those back: nothing lost, nothing twice.
func TestPortAsyncioQueueShutdownWorkersJoin(t *testing.T) {
	inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
		q := newQ(3)
		l := newLedger()
		g, gctx := group.New(context.Background(), group.Options{})
		for range 3 {
			_ = g.Go(func(context.Context) error {
				for v := range q.All(gctx) {
					time.Sleep(time.Millisecond)
					l.add(l.processed, v)
					q.TaskDone()
				}
				return nil
			})
		}
		for v := range 50 {
			require.NoError(t, q.Put(context.Background(), v))
			l.add(l.accepted, v)
		}
		require.NoError(t, q.Join(context.Background()))
		q.Close()
		require.NoError(t, g.Wait())
		require.Equal(t, 0, q.Unfinished())
		l.check(t)
	})

	for seed := range uint64(testutil.HammerRounds(12)) {
		inBubble(t, func(t *testing.T, newQ func(int) pyQueue) {
			rng := rand.New(rand.NewPCG(seed, 12))
			q := newQ(0)
			l := newLedger()
			for v := range 40 {
				require.True(t, q.TryPut(v))
				l.add(l.accepted, v)
			}
			work, stop := context.WithCancel(context.Background())
			g, gctx := group.New(work, group.Options{})
			for w := range 3 {
				_ = g.Go(func(context.Context) error {
					for v := range q.All(gctx) {
						time.Sleep(time.Duration(w+1) * time.Millisecond)
						l.add(l.processed, v)
						q.TaskDone()
					}
					return nil
				})
			}
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
			stop()
			for _, v := range q.CloseNow() {
				l.add(l.handedBack, v)
			}
			require.NoError(t, q.Join(context.Background()))
			require.NoError(t, g.Wait())
			require.Equal(t, 0, q.Unfinished())
			l.check(t)
		})
	}
}
