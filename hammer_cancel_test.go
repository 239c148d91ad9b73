package ctxsync_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// The hammers of this file run every primitive changed by the grant rule (a
// waiter whose ctx has ended is never granted anything) with random
// cancellation, and check at the end that nothing was lost or made up.

// cxCtx: a ctx that never ends, ends at once, or ends after a few microseconds.
func cxCtx(r *rand.Rand) (context.Context, context.CancelFunc) {
	switch r.IntN(4) {
	case 0:
		return context.WithCancel(context.Background())
	case 1:
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		return ctx, cancel
	default:
		return context.WithTimeout(context.Background(), time.Duration(r.IntN(50))*time.Microsecond)
	}
}

func cxRun(workers int, f func(id int, r *rand.Rand)) {
	var wg sync.WaitGroup
	for id := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(id, rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano()))))
		}()
	}
	wg.Wait()
}

func TestHammerCancelLockSemaphore(t *testing.T) {
	for round := range testutil.HammerRounds(30) {
		l := ctxsync.NewLock()
		s := ctxsync.NewSemaphore(2)
		bs := ctxsync.NewBoundedSemaphore(2)
		var inL, inS, inB atomic.Int32
		cxRun(8, func(id int, r *rand.Rand) {
			for range 300 {
				ctx, cancel := cxCtx(r)
				switch r.IntN(3) {
				case 0:
					var err error
					if r.IntN(6) == 0 {
						if !l.TryLock() {
							err = errors.New("busy")
						}
					} else {
						err = l.Lock(ctx)
					}
					if err == nil {
						if inL.Add(1) != 1 {
							panic("two holders")
						}
						if r.IntN(4) == 0 {
							time.Sleep(time.Microsecond)
						}
						inL.Add(-1)
						l.Unlock()
					}
				case 1:
					if s.Acquire(ctx) == nil {
						if inS.Add(1) > 2 {
							panic("three holders")
						}
						inS.Add(-1)
						s.Release()
					}
				case 2:
					if bs.Acquire(ctx) == nil {
						if inB.Add(1) > 2 {
							panic("three holders")
						}
						inB.Add(-1)
						bs.Release()
					}
				}
				cancel()
			}
		})
		require.True(t, l.TryLock(), "round %d: lock lost", round)
		l.Unlock()
		require.False(t, l.Locked())
		require.Equal(t, 2, s.Available(), "round %d", round)
		require.Equal(t, 0, s.Waiting())
		require.Equal(t, 2, bs.Available(), "round %d", round)
		for range 2 {
			require.True(t, s.TryAcquire(), "round %d: permits back", round)
		}
		require.False(t, s.TryAcquire(), "round %d: no permit made up", round)
	}
}

func TestHammerCancelWeightedResize(t *testing.T) {
	for round := range testutil.HammerRounds(30) {
		w := ctxsync.NewWeighted(8)
		var held atomic.Int64
		var stop atomic.Bool
		resized := make(chan struct{})
		go func() {
			defer close(resized)
			r := rand.New(rand.NewPCG(99, uint64(round)))
			for !stop.Load() {
				w.Resize(int64(2 + r.IntN(10)))
				time.Sleep(time.Duration(r.IntN(20)) * time.Microsecond)
			}
			w.Resize(8)
		}()
		cxRun(8, func(id int, r *rand.Rand) {
			for range 300 {
				ctx, cancel := cxCtx(r)
				n := int64(r.IntN(6))
				var err error
				if r.IntN(6) == 0 {
					if !w.TryAcquire(n) {
						err = errors.New("busy")
					}
				} else {
					err = w.Acquire(ctx, n)
				}
				if err == nil {
					held.Add(n)
					time.Sleep(time.Duration(r.IntN(3)) * time.Microsecond)
					held.Add(-n)
					w.Release(n)
				} else if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ctxsync.ErrExceedsCapacity) && err.Error() != "busy" {
					panic(err)
				}
				cancel()
			}
		})
		stop.Store(true)
		<-resized
		require.Equal(t, int64(8), w.Available(), "round %d: units lost", round)
		require.Equal(t, 0, w.Waiting())
		require.True(t, w.TryAcquire(8))
		w.Release(8)
	}
}

func TestHammerCancelRWLock(t *testing.T) {
	for round := range testutil.HammerRounds(30) {
		rw := ctxsync.NewRWLock()
		var readers, writers atomic.Int32
		cxRun(8, func(id int, r *rand.Rand) {
			for range 300 {
				ctx, cancel := cxCtx(r)
				if r.IntN(3) == 0 {
					ok := false
					if r.IntN(6) == 0 {
						ok = rw.TryLock()
					} else {
						ok = rw.Lock(ctx) == nil
					}
					if ok {
						if writers.Add(1) != 1 || readers.Load() != 0 {
							panic("writer not alone")
						}
						writers.Add(-1)
						rw.Unlock()
					}
				} else {
					ok := false
					if r.IntN(6) == 0 {
						ok = rw.TryRLock()
					} else {
						ok = rw.RLock(ctx) == nil
					}
					if ok {
						readers.Add(1)
						if writers.Load() != 0 {
							panic("reader with writer")
						}
						time.Sleep(time.Duration(r.IntN(3)) * time.Microsecond)
						readers.Add(-1)
						rw.RUnlock()
					}
				}
				cancel()
			}
		})
		require.True(t, rw.TryLock(), "round %d: RWLock not free", round)
		rw.Unlock()
		require.True(t, rw.TryRLock())
		rw.RUnlock()
	}
}

type cxQ interface {
	Put(ctx context.Context, v int) error
	TryPut(v int) bool
	Get(ctx context.Context) (int, error)
	TryGet() (int, bool)
	Len() int
	Close()
}

type cxPQ struct{ *ctxsync.PriorityQueue[int] }

func (q cxPQ) Put(ctx context.Context, v int) error { return q.PriorityQueue.Put(ctx, 0, v) }
func (q cxPQ) TryPut(v int) bool                    { return q.PriorityQueue.TryPut(0, v) }

// Producers put numbered items, consumers take them; ctxs end at random. At
// the end: every item put was taken once, each consumer saw each producer's
// items in order, and after a Get returned ErrClosed nothing more came out.
func TestHammerCancelQueues(t *testing.T) {
	kinds := map[string]func(int) cxQ{
		"Queue":         func(c int) cxQ { return ctxsync.NewQueue[int](c) },
		"PriorityQueue": func(c int) cxQ { return cxPQ{ctxsync.NewPriorityQueue[int](c)} },
		"ZeroQueue":     func(int) cxQ { return new(ctxsync.Queue[int]) },
		"ZeroPQ":        func(int) cxQ { return cxPQ{new(ctxsync.PriorityQueue[int])} },
	}
	for name, mk := range kinds {
		t.Run(name, func(t *testing.T) {
			for round := range testutil.HammerRounds(20) {
				q := mk(1 + round%3)
				const producers, consumers, per = 4, 4, 200
				var put [producers][per]atomic.Bool
				var got [producers][per]atomic.Int32
				var prodWG sync.WaitGroup
				for p := range producers {
					prodWG.Add(1)
					go func() {
						defer prodWG.Done()
						r := rand.New(rand.NewPCG(uint64(p), uint64(round)))
						for i := range per {
							ctx, cancel := cxCtx(r)
							v := p*per + i
							var err error
							if r.IntN(6) == 0 {
								if !q.TryPut(v) {
									err = errors.New("full")
								}
							} else {
								err = q.Put(ctx, v)
							}
							cancel()
							if err == nil {
								put[p][i].Store(true)
							}
						}
					}()
				}
				var closed atomic.Bool
				var consWG sync.WaitGroup
				errs := make(chan string, 100)
				for c := range consumers {
					consWG.Add(1)
					go func() {
						defer consWG.Done()
						r := rand.New(rand.NewPCG(uint64(100+c), uint64(round)))
						last := [producers]int{-1, -1, -1, -1}
						sawClosed := false
						for {
							var ctx context.Context
							var cancel context.CancelFunc
							if closed.Load() {
								ctx, cancel = context.WithTimeout(context.Background(), time.Second)
							} else {
								ctx, cancel = cxCtx(r)
							}
							v, err := q.Get(ctx)
							cancel()
							if err == nil {
								if sawClosed {
									errs <- "item after ErrClosed"
								}
								p, i := v/per, v%per
								got[p][i].Add(1)
								if i <= last[p] {
									errs <- "out of order"
								}
								last[p] = i
								continue
							}
							if errors.Is(err, ctxsync.ErrClosed) {
								sawClosed = true
								if _, ok := q.TryGet(); ok {
									errs <- "TryGet got an item after Get returned ErrClosed"
								}
								return
							}
						}
					}()
				}
				prodWG.Wait()
				closed.Store(true)
				q.Close()
				consWG.Wait()
				close(errs)
				for e := range errs {
					t.Fatalf("round %d: %s", round, e)
				}
				for p := range producers {
					for i := range per {
						want := int32(0)
						if put[p][i].Load() {
							want = 1
						}
						require.Equal(t, want, got[p][i].Load(), "round %d item %d/%d", round, p, i)
					}
				}
				require.Zero(t, q.Len())
			}
		})
	}
}

// Join with random cancellation: after every item is TaskDone, Join succeeds.
func TestHammerCancelJoin(t *testing.T) {
	for round := range testutil.HammerRounds(50) {
		q := ctxsync.NewQueue[int](2)
		var done sync.WaitGroup
		r0 := rand.New(rand.NewPCG(7, uint64(round)))
		for c := range 3 {
			done.Add(1)
			go func() {
				defer done.Done()
				r := rand.New(rand.NewPCG(uint64(c), uint64(round)))
				for {
					ctx, cancel := cxCtx(r)
					_, err := q.Get(ctx)
					cancel()
					if err == nil {
						q.TaskDone()
					} else if errors.Is(err, ctxsync.ErrClosed) {
						return
					}
				}
			}()
		}
		for c := range 3 {
			done.Add(1)
			go func() {
				defer done.Done()
				r := rand.New(rand.NewPCG(uint64(c+10), uint64(round)))
				for range 50 {
					ctx, cancel := cxCtx(r)
					_ = q.Join(ctx)
					cancel()
				}
			}()
		}
		for i := range 100 {
			ctx, cancel := cxCtx(r0)
			_ = q.Put(ctx, i)
			cancel()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, q.Join(ctx), "round %d", round)
		cancel()
		q.Close()
		done.Wait()
	}
}
