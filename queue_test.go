package ctxsync_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// intQueue is what Queue and PriorityQueue share, for tests that run on both.
// The PriorityQueue puts everything at one priority, where it must be FIFO.
type intQueue interface {
	Put(ctx context.Context, v int) error
	TryPut(v int) bool
	Get(ctx context.Context) (int, error)
	TryGet() (int, bool)
	Len() int
	Close()
}

type samePriority struct{ *ctxsync.PriorityQueue[int] }

func (q samePriority) Put(ctx context.Context, v int) error { return q.PriorityQueue.Put(ctx, 7, v) }
func (q samePriority) TryPut(v int) bool                    { return q.PriorityQueue.TryPut(7, v) }

var queueKinds = []struct {
	name string
	new  func(capacity int) intQueue
}{
	{"Queue", func(c int) intQueue { return ctxsync.NewQueue[int](c) }},
	{"PriorityQueue", func(c int) intQueue { return samePriority{ctxsync.NewPriorityQueue[int](c)} }},
}

func forEachQueue(t *testing.T, f func(t *testing.T, newQ func(capacity int) intQueue)) {
	for _, k := range queueKinds {
		t.Run(k.name, func(t *testing.T) { f(t, k.new) })
	}
}

type gotItem struct {
	v   int
	err error
}

func getAsync(ctx context.Context, q intQueue) <-chan gotItem {
	ch := make(chan gotItem, 1)
	go func() {
		v, err := q.Get(ctx)
		ch <- gotItem{v, err}
	}()
	return ch
}

func putAsync(ctx context.Context, q intQueue, v int) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- q.Put(ctx, v) }()
	return ch
}

func TestQueueBasics(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		q := newQ(0)
		bg := context.Background()
		for i := range 100 {
			require.NoError(t, q.Put(bg, i))
		}
		require.True(t, q.TryPut(100))
		require.Equal(t, 101, q.Len())
		for i := range 101 {
			v, err := q.Get(bg)
			require.NoError(t, err)
			require.Equal(t, i, v)
		}
		_, ok := q.TryGet()
		require.False(t, ok)
		require.Equal(t, 0, q.Len())
	})
}

func TestQueueBackpressure(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(2)
			require.NoError(t, q.Put(t.Context(), 1))
			require.True(t, q.TryPut(2))
			require.False(t, q.TryPut(3), "TryPut on a full queue")

			p3 := putAsync(t.Context(), q, 3)
			synctest.Wait()
			p4 := putAsync(t.Context(), q, 4)
			synctest.Wait()
			require.True(t, pending(p3))
			require.Equal(t, 2, q.Len())

			v, ok := q.TryGet() // makes room for the oldest producer
			require.True(t, ok)
			require.Equal(t, 1, v)
			require.NoError(t, <-p3)
			synctest.Wait()
			require.True(t, pending(p4))
			require.False(t, q.TryPut(5), "TryPut overtook a waiting producer")
			for _, want := range []int{2, 3, 4} {
				v, err := q.Get(t.Context())
				require.NoError(t, err)
				require.Equal(t, want, v)
			}
			require.NoError(t, <-p4)
		})
	})
}

func TestQueueConsumersFIFO(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(1)
			g1 := getAsync(t.Context(), q)
			synctest.Wait()
			g2 := getAsync(t.Context(), q)
			synctest.Wait()
			require.NoError(t, q.Put(t.Context(), 10))
			require.Equal(t, gotItem{10, nil}, <-g1)
			require.NoError(t, q.Put(t.Context(), 20))
			require.Equal(t, gotItem{20, nil}, <-g2)
		})
	})
}

func TestQueueClose(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(1)
			require.NoError(t, q.Put(t.Context(), 1))
			blocked := putAsync(t.Context(), q, 2)
			synctest.Wait()

			q.Close()
			require.Equal(t, ctxsync.ErrClosed, <-blocked, "a producer blocked at Close")
			require.Equal(t, ctxsync.ErrClosed, q.Put(t.Context(), 3))
			require.False(t, q.TryPut(3))
			v, err := q.Get(t.Context()) // drains what is left
			require.NoError(t, err)
			require.Equal(t, 1, v)
			_, err = q.Get(t.Context())
			require.Equal(t, ctxsync.ErrClosed, err)
			q.Close() // a no-op

			// Consumers waiting at Close are released.
			q2 := newQ(0)
			g := getAsync(t.Context(), q2)
			synctest.Wait()
			q2.Close()
			require.Equal(t, ctxsync.ErrClosed, (<-g).err)
		})
	})
}

func TestQueueDoneContext(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		for _, tc := range doneCtxCases(t) {
			q := newQ(2)
			require.NoError(t, q.Put(context.Background(), 1))
			require.Equal(t, tc.want, q.Put(tc.ctx, 2), "Put with a done ctx and room")
			_, err := q.Get(tc.ctx)
			require.Equal(t, tc.want, err, "Get with a done ctx and an item")
			require.Equal(t, 1, q.Len(), "a failed call changed the queue")
		}
	})
}

func TestQueueContextEndsWhileWaiting(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(1)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			g := getAsync(ctx, q)
			time.Sleep(time.Second)
			require.Equal(t, context.DeadlineExceeded, (<-g).err)

			require.NoError(t, q.Put(t.Context(), 1))
			ctx2, cancel2 := context.WithCancel(t.Context())
			p := putAsync(ctx2, q, 2)
			synctest.Wait()
			p3 := putAsync(t.Context(), q, 3)
			synctest.Wait()
			cancel2()
			require.Equal(t, context.Canceled, <-p)
			for _, want := range []int{1, 3} {
				v, err := q.Get(t.Context())
				require.NoError(t, err)
				require.Equal(t, want, v, "the cancelled producer's item got in")
			}
			require.NoError(t, <-p3)
		})
	})
}

// TestQueueHandBack: an item handed to a consumer that gives up at that moment
// goes to the next consumer, or back to the front, ahead of later items.
func TestQueueHandBack(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		for range testutil.HammerRounds(1000) {
			q := newQ(0)
			ctx, cancel := context.WithCancel(context.Background())
			g := getAsync(ctx, q)
			go cancel()
			require.NoError(t, q.Put(context.Background(), 1))
			require.NoError(t, q.Put(context.Background(), 2))
			got := <-g
			var rest []int
			for {
				v, ok := q.TryGet()
				if !ok {
					break
				}
				rest = append(rest, v)
			}
			if got.err == nil {
				require.Equal(t, 1, got.v)
				require.Equal(t, []int{2}, rest)
			} else {
				require.Equal(t, context.Canceled, got.err)
				require.Equal(t, []int{1, 2}, rest, "the item was lost or lost its place")
			}
		}
	})
}

// TestQueueHandOnToNextConsumer: an item handed to a consumer that gives up
// at that moment goes to the consumer queued behind it, ahead of later items.
func TestQueueHandOnToNextConsumer(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		passedOn := 0
		for range testutil.HammerRounds(300) {
			synctest.Test(t, func(t *testing.T) {
				q := newQ(0)
				ctx, cancel := context.WithCancel(t.Context())
				a := getAsync(ctx, q)
				synctest.Wait()
				b := getAsync(t.Context(), q) // queued behind a
				synctest.Wait()

				cancel() // a wakes to its ctx, its item, or both at once
				require.NoError(t, q.Put(t.Context(), 1))
				gotA := <-a
				if gotA.err == nil {
					require.Equal(t, 1, gotA.v)
				} else {
					passedOn++
					require.Equal(t, context.Canceled, gotA.err)
					require.Equal(t, gotItem{v: 1}, <-b, "the item a gave up did not go to b")
					b = nil
				}
				require.NoError(t, q.Put(t.Context(), 2))
				if b != nil {
					require.Equal(t, gotItem{v: 2}, <-b)
				} else {
					v, ok := q.TryGet()
					require.True(t, ok)
					require.Equal(t, 2, v)
				}
				require.Zero(t, q.Len())
			})
		}
		t.Logf("%d rounds passed the item on", passedOn)
	})
}

// TestQueueManyProducersConsumers: with random cancellation on both sides,
// every item put is received exactly once.
func TestQueueManyProducersConsumers(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		const producers, consumers = 6, 6
		per := testutil.HammerRounds(300)
		q := newQ(4)
		var received sync.Map
		var count atomic.Int64
		var pwg, cwg sync.WaitGroup
		for p := range producers {
			pwg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(p), 12))
				for i := 0; i < per; {
					ctx, cancel := randomCtx(r)
					if err := q.Put(ctx, p*per+i); err == nil {
						i++
					} else if err != ctx.Err() {
						t.Errorf("Put = %v", err)
					}
					cancel()
				}
			})
		}
		for c := range consumers {
			cwg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(c), 13))
				for {
					ctx, cancel := randomCtx(r)
					v, err := q.Get(ctx)
					cancel()
					if err == ctxsync.ErrClosed {
						return
					}
					if err != nil {
						continue
					}
					if _, dup := received.LoadOrStore(v, true); dup {
						t.Errorf("item %d received twice", v)
					}
					count.Add(1)
				}
			})
		}
		pwg.Wait()
		q.Close()
		cwg.Wait()
		require.Equal(t, int64(producers*per), count.Load(), "items lost")
		require.Equal(t, 0, q.Len())
	})
}

func TestQueueMisuse(t *testing.T) {
	require.PanicsWithValue(t, "ctxsync: NewQueue with negative capacity", func() { ctxsync.NewQueue[int](-1) })
	require.PanicsWithValue(t, "ctxsync: NewPriorityQueue with negative capacity", func() { ctxsync.NewPriorityQueue[int](-1) })
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		q := newQ(0)
		require.PanicsWithValue(t, "ctxsync: nil Context", func() {
			//lint:ignore SA1012 a nil Context is the misuse under test
			_ = q.Put(nil, 1)
		})
		require.PanicsWithValue(t, "ctxsync: nil Context", func() {
			//lint:ignore SA1012 a nil Context is the misuse under test
			_, _ = q.Get(nil)
		})
		require.Equal(t, 0, q.Len())
	})
	q := ctxsync.NewQueue[int](0)
	const tooMany = "ctxsync: Queue.TaskDone called more times than items were taken"
	require.PanicsWithValue(t, tooMany, q.TaskDone)
	require.NoError(t, q.Put(context.Background(), 1))
	require.PanicsWithValue(t, tooMany, q.TaskDone, "put, not taken")
	require.Equal(t, 1, q.Unfinished(), "the panic changed nothing")
	_, ok := q.TryGet()
	require.True(t, ok)
	q.TaskDone()
	require.PanicsWithValue(t, tooMany, q.TaskDone)
	require.Zero(t, q.Unfinished())
}

func TestQueueJoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[string](0)
		require.NoError(t, q.Join(t.Context()), "Join with nothing put")
		for _, s := range []string{"a", "b", "c"} {
			require.NoError(t, q.Put(t.Context(), s))
		}
		joined := make(chan error, 2)
		go func() { joined <- q.Join(t.Context()) }()
		go func() { joined <- q.Join(t.Context()) }()
		for range 3 {
			_, err := q.Get(t.Context())
			require.NoError(t, err)
			synctest.Wait()
			require.Zero(t, len(joined), "Join returned with items unfinished")
			q.TaskDone()
		}
		require.NoError(t, <-joined)
		require.NoError(t, <-joined)

		// Join's ctx ending.
		require.NoError(t, q.Put(t.Context(), "d"))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		require.Equal(t, context.DeadlineExceeded, q.Join(ctx))
		require.Equal(t, context.Canceled, q.Join(testutil.Cancelled()))
	})
}

func TestQueueAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](2)
		go func() {
			for i := range 5 {
				assert.NoError(t, q.Put(t.Context(), i))
			}
			q.Close()
		}()
		var got []int
		for v := range q.All(t.Context()) {
			got = append(got, v)
		}
		require.Equal(t, []int{0, 1, 2, 3, 4}, got)

		// Breaking out leaves the rest in the queue.
		q2 := ctxsync.NewQueue[int](0)
		for i := range 3 {
			require.NoError(t, q2.Put(t.Context(), i))
		}
		for v := range q2.All(t.Context()) {
			if v == 0 {
				break
			}
		}
		require.Equal(t, 2, q2.Len())

		// It stops when ctx ends.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		n := 0
		for range q2.All(ctx) {
			n++
		}
		require.Equal(t, 2, n)
	})
}

func TestPriorityQueueOrder(t *testing.T) {
	q := ctxsync.NewPriorityQueue[string](0)
	bg := context.Background()
	puts := []struct {
		prio int
		v    string
	}{{5, "e1"}, {1, "a1"}, {3, "c1"}, {1, "a2"}, {-2, "neg"}, {5, "e2"}, {3, "c2"}, {1, "a3"}}
	for _, p := range puts {
		require.NoError(t, q.Put(bg, p.prio, p.v))
	}
	var got []string
	for q.Len() > 0 {
		v, ok := q.TryGet()
		require.True(t, ok)
		got = append(got, v)
	}
	require.Equal(t, []string{"neg", "a1", "a2", "a3", "c1", "c2", "e1", "e2"}, got,
		"lowest priority first, equal priorities in the order put")
}

// TestPriorityQueueRandomOrder: many random priorities come out sorted by
// priority, then by the order they were put.
func TestPriorityQueueRandomOrder(t *testing.T) {
	q := ctxsync.NewPriorityQueue[[2]int](0)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		p := r.IntN(20) - 10
		require.True(t, q.TryPut(p, [2]int{p, i}))
	}
	prev := [2]int{-11, -1}
	for q.Len() > 0 {
		v, _ := q.TryGet()
		if v[0] < prev[0] || (v[0] == prev[0] && v[1] < prev[1]) {
			t.Fatalf("%v came out after %v", v, prev)
		}
		prev = v
	}
}

// TestPriorityQueueHandBackKeepsPlace: an item handed to a consumer that gives
// up goes back ahead of its equals put after it, and behind anything of lower
// priority value.
func TestPriorityQueueHandBackKeepsPlace(t *testing.T) {
	for range testutil.HammerRounds(500) {
		q := ctxsync.NewPriorityQueue[string](0)
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		var got string
		go func() {
			var err error
			got, err = q.Get(ctx)
			res <- err
		}()
		go cancel()
		bg := context.Background()
		require.NoError(t, q.Put(bg, 5, "first"))
		require.NoError(t, q.Put(bg, 5, "second"))
		require.NoError(t, q.Put(bg, 1, "urgent"))
		err := <-res
		var rest []string
		for q.Len() > 0 {
			v, _ := q.TryGet()
			rest = append(rest, v)
		}
		// In the queue's order, whoever took one: the consumer may have
		// taken "first" while waiting, or "urgent" if it came after the puts.
		want := []string{"urgent", "first", "second"}
		if err == nil {
			require.Contains(t, []string{"first", "urgent"}, got)
			for i, v := range want {
				if v == got {
					want = append(want[:i:i], want[i+1:]...)
					break
				}
			}
		}
		require.Equal(t, want, rest, "an item was lost or lost its place")
	}
}

// TestQueueNoLostWakeups: producers and consumers that never give up pass
// every item, at capacities where the queue is often full, empty, or both at
// once (capacity 1). A wake-up lost between the two sides leaves them all
// blocked, which the synctest bubble reports as a deadlock.
func TestQueueNoLostWakeups(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		for _, capacity := range []int{0, 1, 2, 64} {
			synctest.Test(t, func(t *testing.T) {
				q := newQ(capacity)
				const sides = 4
				per := testutil.HammerRounds(2000)
				ctx := context.Background()
				var sum atomic.Int64
				var wg sync.WaitGroup
				for range sides {
					wg.Go(func() {
						for i := range per {
							assert.NoError(t, q.Put(ctx, i))
						}
					})
					wg.Go(func() {
						for range per {
							v, err := q.Get(ctx)
							assert.NoError(t, err)
							sum.Add(int64(v))
						}
					})
				}
				wg.Wait()
				require.EqualValues(t, sides*per*(per-1)/2, sum.Load(), "capacity %d", capacity)
				require.Zero(t, q.Len())
			})
		}
	})
}

// TestHammerQueue follows every item: each one a Put or TryPut accepted
// comes out exactly once, through a Get, a TryGet or the final drain, and no
// other. Unbounded and bounded, and closed midway while goroutines still put
// and get, after which Puts fail and the Gets drain what is left.
func TestHammerQueue(t *testing.T) {
	forEachQueue(t, func(t *testing.T, newQ func(int) intQueue) {
		for _, capacity := range []int{0, 1, 3} {
			for _, closeMidway := range []bool{false, true} {
				q := newQ(capacity)
				var mu sync.Mutex
				accepted, taken := map[int]bool{}, map[int]int{}
				var closed atomic.Int64 // calls that found the queue closed
				var wg sync.WaitGroup
				rounds := testutil.HammerRounds(1000)
				for g := range 16 {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(g), 15))
						for i := range rounds {
							if closeMidway && g == 0 && i == rounds/2 {
								q.Close()
							}
							v := g*rounds + i
							ctx, cancel := endingCtx(r)
							var err error
							ok, put := false, false
							switch r.IntN(4) {
							case 0:
								ok, put = q.TryPut(v), true
							case 1:
								err, put = q.Put(ctx, v), true
								ok = err == nil
							case 2:
								v, ok = q.TryGet()
							default:
								v, err = q.Get(ctx)
								ok = err == nil
							}
							cancel()
							if errors.Is(err, ctxsync.ErrClosed) {
								closed.Add(1)
							}
							if !ok {
								continue
							}
							mu.Lock()
							if put {
								accepted[v] = true
							} else {
								taken[v]++
							}
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				q.Close()
				for {
					v, err := q.Get(context.Background())
					if err != nil {
						require.ErrorIs(t, err, ctxsync.ErrClosed)
						break
					}
					taken[v]++
				}
				require.Zero(t, q.Len())
				for v := range accepted {
					require.Equal(t, 1, taken[v], "item %d came out %d times", v, taken[v])
				}
				require.Len(t, taken, len(accepted), "items came out that were never put")
				if closeMidway {
					require.Positive(t, closed.Load(), "no Get or Put saw the queue closed")
				}
			}
		}
	})
}
