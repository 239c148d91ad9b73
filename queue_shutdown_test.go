package ctxsync_test

import (
	"context"
	"iter"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// taskQueue is what Queue and PriorityQueue share for task accounting and
// shutdown.
type taskQueue interface {
	intQueue
	TaskDone()
	Join(ctx context.Context) error
	Unfinished() int
	CloseNow() []int
	All(ctx context.Context) iter.Seq[int]
}

type pqTasks struct{ samePriority }

type qTasks struct{ *ctxsync.Queue[int] }

func forEachTaskQueue(t *testing.T, f func(t *testing.T, newQ func(capacity int) taskQueue)) {
	t.Run("Queue", func(t *testing.T) {
		f(t, func(c int) taskQueue { return qTasks{ctxsync.NewQueue[int](c)} })
	})
	t.Run("PriorityQueue", func(t *testing.T) {
		f(t, func(c int) taskQueue { return pqTasks{samePriority{ctxsync.NewPriorityQueue[int](c)}} })
	})
}

// TestCloseNow: the items left come out in order and count as done; waiting
// producers and consumers are released with ErrClosed; Join then waits only
// for the items taken.
func TestCloseNow(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(3)
			for v := 1; v <= 3; v++ {
				require.NoError(t, q.Put(t.Context(), v))
			}
			put := putAsync(t.Context(), q, 4) // waits for room
			v, err := q.Get(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, v)
			synctest.Wait()
			require.Equal(t, 4, q.Unfinished(), "3 queued (4 let in), 1 taken")
			joined := make(chan error, 1)
			go func() { joined <- q.Join(t.Context()) }()

			require.Equal(t, []int{2, 3, 4}, q.CloseNow())
			require.Zero(t, q.Len())
			require.Equal(t, 1, q.Unfinished(), "the one taken")
			require.NoError(t, <-put, "let in before CloseNow")
			_, err = q.Get(t.Context())
			require.ErrorIs(t, err, ctxsync.ErrClosed)
			require.ErrorIs(t, q.Put(t.Context(), 5), ctxsync.ErrClosed)
			synctest.Wait()
			require.Empty(t, joined, "Join waits for the item taken")
			q.TaskDone()
			require.NoError(t, <-joined)
			require.Zero(t, q.Unfinished())
			require.Panics(t, q.TaskDone)
			require.Nil(t, q.CloseNow(), "nothing left")
		})
	})
}

// TestCloseNowReleasesWaiters: consumers waiting on an empty queue get
// ErrClosed at once; producers waiting for room too.
func TestCloseNowReleasesWaiters(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(0)
			g := getAsync(t.Context(), q)
			synctest.Wait()
			require.Empty(t, q.CloseNow())
			require.ErrorIs(t, (<-g).err, ctxsync.ErrClosed)

			q = newQ(1)
			require.True(t, q.TryPut(1))
			p := putAsync(t.Context(), q, 2)
			synctest.Wait()
			require.Equal(t, []int{1}, q.CloseNow())
			require.ErrorIs(t, <-p, ctxsync.ErrClosed, "never let in")
			require.NoError(t, q.Join(t.Context()), "the one item was handed back")
		})
	})
}

// TestGracefulDrain is the recipe in Queue.CloseNow's doc: workers ranging
// over All with a ctx that ends leave items queued, and Join would wait for
// them for ever; after the workers stop, CloseNow hands them back and Join
// returns once the items taken are done.
func TestGracefulDrain(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(0)
			for v := range 10 {
				require.NoError(t, q.Put(t.Context(), v))
			}
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			var workers sync.WaitGroup
			var mu sync.Mutex
			var done []int
			for range 2 {
				workers.Go(func() {
					for v := range q.All(ctx) {
						mu.Lock()
						done = append(done, v)
						if len(done) == 3 {
							stop() // the signal comes mid-way
						}
						mu.Unlock()
						q.TaskDone()
					}
				})
			}
			workers.Wait()
			left := q.CloseNow()
			require.Len(t, append(append([]int(nil), done...), left...), 10, "every item done or handed back")
			require.NoError(t, q.Join(t.Context()))
		})
	})
}

// TestPriorityQueueTasks: a PriorityQueue has Queue's task accounting, and
// All yields in priority order.
func TestPriorityQueueTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewPriorityQueue[string](0)
		require.NoError(t, q.Join(t.Context()), "nothing put")
		require.PanicsWithValue(t, "ctxsync: PriorityQueue.TaskDone called more times than items were taken", q.TaskDone)
		require.NoError(t, q.Put(t.Context(), 2, "b"))
		require.NoError(t, q.Put(t.Context(), 1, "a"))
		require.NoError(t, q.Put(t.Context(), 3, "c"))
		require.Equal(t, 3, q.Unfinished())
		joined := make(chan error, 1)
		go func() { joined <- q.Join(t.Context()) }()
		q.Close()
		var got []string
		for v := range q.All(t.Context()) {
			got = append(got, v)
			synctest.Wait()
			require.Empty(t, joined)
			q.TaskDone()
		}
		require.Equal(t, []string{"a", "b", "c"}, got)
		require.NoError(t, <-joined)
		require.Zero(t, q.Unfinished())
		require.Equal(t, context.Canceled, q.Join(testutil.Cancelled()))
	})
}

// TestCloseNowCountsItemDoneTwice pins a double count: TaskDone was accepted
// up to the number of items put, not taken, so a TaskDone for an item still
// queued passed, and CloseNow then counted that item done a second time as it
// handed it back. Unfinished went to -1, Join waited for its ctx, and every
// later TaskDone was accepted. TaskDone now panics past the items taken.
func TestCloseNowCountsItemDoneTwice(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(0)
			require.NoError(t, q.Put(t.Context(), 1))
			require.NoError(t, q.Put(t.Context(), 2))
			v, err := q.Get(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, v)
			q.TaskDone()
			assert.Panics(t, q.TaskDone, "item 2 was never taken")
			assert.Equal(t, 1, q.Unfinished(), "item 2, queued")

			require.Equal(t, []int{2}, q.CloseNow())
			assert.Zero(t, q.Unfinished())
			ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
			defer cancel()
			assert.NoError(t, q.Join(ctx))
			assert.Panics(t, q.TaskDone, "every item is done")
			require.Zero(t, q.Unfinished())
		})
	})
}

// TestHammerQueueTasks hammers the task accounting: goroutines put, take,
// mark done and Join with contexts that end at random, now and then call
// TaskDone for an item they do not hold, and the queue is closed midway, with
// Close or with CloseNow. Unfinished is never negative; every item accepted
// comes out once, taken or handed back; at the end the TaskDone calls
// accepted are the items taken, so Unfinished is what is queued; once that is
// drained and done, Join returns and one more TaskDone panics.
func TestHammerQueueTasks(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		for _, capacity := range []int{0, 1, 3} {
			for _, now := range []bool{false, true} {
				q := newQ(capacity)
				var mu sync.Mutex
				accepted, out := map[int]bool{}, map[int]int{}
				var wg sync.WaitGroup
				rounds := testutil.HammerRounds(500)
				for g := range 8 {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(g), uint64(capacity)))
						owed := 0 // items this goroutine took and has not marked done
						for i := range rounds {
							if g == 0 && i == rounds/2 {
								if now {
									left := q.CloseNow()
									mu.Lock()
									for _, v := range left {
										out[v]++
									}
									mu.Unlock()
								} else {
									q.Close()
								}
							}
							if n := q.Unfinished(); n < 0 {
								t.Errorf("Unfinished() = %d, want >= 0", n)
							}
							v := g*rounds + i
							ctx, cancel := endingCtx(r)
							ok, put := false, false
							switch r.IntN(7) {
							case 0:
								ok, put = q.TryPut(v), true
							case 1:
								ok, put = q.Put(ctx, v) == nil, true
							case 2:
								v, ok = q.TryGet()
							case 3:
								var err error
								v, err = q.Get(ctx)
								ok = err == nil
							case 4:
								// A TaskDone owed by another goroutine, or by
								// none: accepted only while some item taken is
								// not done; its owner's TaskDone may then panic.
								tryTaskDone(t, q)
							case 5:
								if owed > 0 && tryTaskDone(t, q) {
									owed--
								}
							default:
								if err := q.Join(ctx); err != nil && ctx.Err() == nil {
									t.Errorf("Join = %v with its ctx alive", err)
								}
							}
							cancel()
							if !ok {
								continue
							}
							mu.Lock()
							if put {
								accepted[v] = true
							} else {
								out[v]++
								owed++
							}
							mu.Unlock()
						}
						for owed > 0 && tryTaskDone(t, q) {
							owed--
						}
					})
				}
				wg.Wait()
				require.Equal(t, q.Len(), q.Unfinished(), "every item taken is done, no more")
				q.Close()
				for {
					v, err := q.Get(context.Background())
					if err != nil {
						require.ErrorIs(t, err, ctxsync.ErrClosed)
						break
					}
					out[v]++
					q.TaskDone()
				}
				for v := range accepted {
					require.Equal(t, 1, out[v], "item %d came out %d times", v, out[v])
				}
				require.Len(t, out, len(accepted), "items came out that were never put")
				require.Zero(t, q.Unfinished(), "capacity %d, CloseNow %v", capacity, now)
				require.NoError(t, q.Join(context.Background()))
				require.Panics(t, q.TaskDone, "every item taken is done")
				require.Zero(t, q.Unfinished())
			}
		}
	})
}

// tryTaskDone calls q.TaskDone and reports whether it was accepted; a TaskDone
// past the items taken must panic with the package's message.
func tryTaskDone(t *testing.T, q taskQueue) (ok bool) {
	defer func() {
		if e := recover(); e != nil {
			if msg, _ := e.(string); !strings.HasPrefix(msg, "ctxsync: ") || !strings.HasSuffix(msg, "called more times than items were taken") {
				t.Errorf("TaskDone panicked with %v", e)
			}
		}
	}()
	q.TaskDone()
	return true
}

// TestAllYieldsItemTakenAsCtxEnds pins what All's doc says of an item taken as
// ctx ends: handed over before ctx ended, it is yielded to the loop body and
// is owed a TaskDone; put after ctx ended, it is not taken and stays queued.
func TestAllYieldsItemTakenAsCtxEnds(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ(0)
			ctx, cancel := context.WithCancel(t.Context())
			got := make(chan []int, 1)
			go func() {
				var vs []int
				for v := range q.All(ctx) {
					vs = append(vs, v)
				}
				got <- vs
			}()
			synctest.Wait() // the loop waits in Get
			require.NoError(t, q.Put(t.Context(), 1))
			cancel() // before the loop has run again
			require.Equal(t, []int{1}, <-got, "handed over before ctx ended: yielded")
			require.Zero(t, q.Len())
			require.Equal(t, 1, q.Unfinished())
			q.TaskDone() // owed: it was taken

			require.NoError(t, q.Put(t.Context(), 2))
			for range q.All(ctx) {
				t.Fatal("All took an item after its ctx ended")
			}
			require.Equal(t, 1, q.Len(), "left in the queue")
			require.Panics(t, q.TaskDone, "nothing taken is owed a TaskDone")
			require.Equal(t, []int{2}, q.CloseNow())
			require.NoError(t, q.Join(t.Context()))
		})
	})
}

// TestZeroQueuesShutdown: the zero Queue and PriorityQueue have the task
// accounting and shutdown too. Nothing put: Join returns, a done ctx still
// fails it, TaskDone panics, CloseNow hands back nothing and closes.
func TestZeroQueuesShutdown(t *testing.T) {
	var zq ctxsync.Queue[int]
	var zpq ctxsync.PriorityQueue[int]
	for name, q := range map[string]taskQueue{"Queue": qTasks{&zq}, "PriorityQueue": pqTasks{samePriority{&zpq}}} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			require.Zero(t, q.Unfinished())
			require.NoError(t, q.Join(ctx))
			require.Equal(t, context.Canceled, q.Join(testutil.Cancelled()), "a done ctx fails with nothing unfinished")
			require.Panics(t, q.TaskDone)
			require.Zero(t, q.Unfinished(), "the panic changed nothing")
			require.Empty(t, q.CloseNow())
			require.Empty(t, q.CloseNow(), "again")
			q.Close() // after CloseNow: does nothing
			require.ErrorIs(t, q.Put(ctx, 1), ctxsync.ErrClosed)
			require.False(t, q.TryPut(1))
			_, err := q.Get(ctx)
			require.ErrorIs(t, err, ctxsync.ErrClosed)
			for range q.All(ctx) {
				t.Fatal("All yielded from a closed, empty queue")
			}
			require.Zero(t, q.Unfinished())
			require.NoError(t, q.Join(ctx))
		})
	}
}

// TestShutdownOrderings: Close, CloseNow, TaskDone and Join in the orders a
// shutdown may take, at capacities 0, 1 and the largest.
func TestShutdownOrderings(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		for _, capacity := range []int{0, 1, 3, math.MaxInt} {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				fill := func(q taskQueue, n int) {
					for v := range n {
						require.NoError(t, q.Put(ctx, v))
					}
				}
				n := min(capacity, 3)
				if n == 0 {
					n = 3
				}

				// Close, a Get drains one, CloseNow takes the rest: TaskDone
				// owed for the one taken only.
				q := newQ(capacity)
				fill(q, n)
				q.Close()
				v, err := q.Get(ctx)
				require.NoError(t, err)
				require.Zero(t, v)
				joined := make(chan error, 1)
				go func() { joined <- q.Join(ctx) }()
				want := []int{}
				for v := 1; v < n; v++ {
					want = append(want, v)
				}
				require.Equal(t, want, append([]int{}, q.CloseNow()...))
				require.Equal(t, 1, q.Unfinished())
				synctest.Wait()
				require.Empty(t, joined, "the item taken is not done")
				q.TaskDone()
				require.NoError(t, <-joined)
				require.Panics(t, q.TaskDone)
				require.Zero(t, q.Unfinished())

				// TaskDone for every item taken, then CloseNow: Join was
				// waiting for the items queued only.
				q = newQ(capacity)
				fill(q, n)
				_, ok := q.TryGet()
				require.True(t, ok)
				q.TaskDone()
				go func() { joined <- q.Join(ctx) }()
				synctest.Wait()
				if n > 1 {
					require.Empty(t, joined, "items queued")
				}
				require.Len(t, q.CloseNow(), n-1)
				require.NoError(t, <-joined)
				require.Zero(t, q.Unfinished())
				require.Panics(t, q.TaskDone)

				// A Join whose ctx is done fails even when CloseNow leaves
				// nothing unfinished, and changes nothing.
				q = newQ(capacity)
				fill(q, n)
				require.Equal(t, context.Canceled, q.Join(testutil.Cancelled()))
				require.Len(t, q.CloseNow(), n)
				require.Equal(t, context.Canceled, q.Join(testutil.Cancelled()))
				require.NoError(t, q.Join(ctx))
			})
		}
	})
}

// TestCloseNowRacesPut: a producer waiting for room and consumers waiting for
// items, while Puts and CloseNow race. Every item accepted is taken or handed
// back, once, and Join returns once the items taken are done.
func TestCloseNowRacesPut(t *testing.T) {
	forEachTaskQueue(t, func(t *testing.T, newQ func(int) taskQueue) {
		for round := range testutil.HammerRounds(200) {
			q := newQ(round % 3)
			var wg sync.WaitGroup
			var mu sync.Mutex
			accepted, out := map[int]bool{}, map[int]int{}
			for g := range 4 {
				wg.Go(func() { // producers
					for i := range 5 {
						v := g*10 + i
						if q.Put(context.Background(), v) == nil {
							mu.Lock()
							accepted[v] = true
							mu.Unlock()
						}
					}
				})
				wg.Go(func() { // consumers
					for {
						v, err := q.Get(context.Background())
						if err != nil {
							return
						}
						mu.Lock()
						out[v]++
						mu.Unlock()
						q.TaskDone()
					}
				})
			}
			runtime.Gosched()
			left := q.CloseNow()
			wg.Wait()
			for _, v := range left {
				out[v]++
			}
			for v := range accepted {
				require.Equal(t, 1, out[v], "item %d came out %d times", v, out[v])
			}
			require.Len(t, out, len(accepted))
			require.Zero(t, q.Unfinished())
			require.NoError(t, q.Join(context.Background()))
			require.Panics(t, q.TaskDone)
		}
	})
}
