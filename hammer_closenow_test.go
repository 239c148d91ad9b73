package ctxsync_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// cxJQ is a queue with the accounting of Join: TaskDone, Join, Unfinished
// and CloseNow.
type cxJQ interface {
	cxQ
	TaskDone()
	Join(ctx context.Context) error
	Unfinished() int
	CloseNow() []int
}

// Put, Get, TaskDone, Join and CloseNow race one another with random
// cancellation, CloseNow coming at a random moment. Every item put is taken
// once, by a Get or by CloseNow; Unfinished is never negative; a Join that
// succeeds before CloseNow has seen every item it could know of done; after
// the consumers have marked their items, Join succeeds and nothing is
// unfinished.
func TestHammerQueueCloseNowJoin(t *testing.T) {
	kinds := map[string]func(int) cxJQ{
		"Queue":         func(c int) cxJQ { return ctxsync.NewQueue[int](c) },
		"PriorityQueue": func(c int) cxJQ { return cxPQ{ctxsync.NewPriorityQueue[int](c)} },
	}
	for name, mk := range kinds {
		t.Run(name, func(t *testing.T) {
			for round := range testutil.HammerRounds(20) {
				q := mk(round % 3) // 0: unbounded
				const producers, consumers, joiners, per = 3, 3, 2, 150
				var put, got [producers * per]atomic.Int32
				var putOK, doneN atomic.Int64
				var closingNow atomic.Bool
				errs := make(chan string, 64)
				report := func(format string, a ...any) {
					select {
					case errs <- fmt.Sprintf(format, a...):
					default:
					}
				}
				var prodWG, consWG, joinWG sync.WaitGroup
				for p := range producers {
					prodWG.Go(func() {
						r := rand.New(rand.NewPCG(uint64(p), uint64(round)))
						for i := range per {
							v := p*per + i
							ctx, cancel := cxCtx(r)
							err := q.Put(ctx, v)
							cancel()
							if err == nil {
								put[v].Add(1)
								putOK.Add(1)
							} else if !errors.Is(err, ctxsync.ErrClosed) && ctx.Err() == nil {
								report("Put: %v with a live ctx", err)
							}
						}
					})
				}
				for c := range consumers {
					consWG.Go(func() {
						r := rand.New(rand.NewPCG(uint64(100+c), uint64(round)))
						for {
							ctx, cancel := cxCtx(r)
							v, err := q.Get(ctx)
							cancel()
							if err == nil {
								got[v].Add(1)
								doneN.Add(1) // counted before TaskDone: never behind it
								q.TaskDone()
								continue
							}
							if errors.Is(err, ctxsync.ErrClosed) {
								return
							}
						}
					})
				}
				stop := make(chan struct{})
				for j := range joiners {
					joinWG.Go(func() {
						r := rand.New(rand.NewPCG(uint64(200+j), uint64(round)))
						for {
							select {
							case <-stop:
								return
							default:
							}
							if u := q.Unfinished(); u < 0 {
								report("Unfinished %d", u)
							}
							known := putOK.Load()
							ctx, cancel := cxCtx(r)
							err := q.Join(ctx)
							cancel()
							if err == nil && !closingNow.Load() && doneN.Load() < known {
								report("Join returned with %d done of %d put before it", doneN.Load(), known)
							}
						}
					})
				}
				// CloseNow comes after a random number of items went in, or
				// once the producers are done.
				prodDone := make(chan struct{})
				go func() { prodWG.Wait(); close(prodDone) }()
				r := rand.New(rand.NewPCG(300, uint64(round)))
				for target := int64(r.IntN(producers * per)); putOK.Load() < target; runtime.Gosched() {
					select {
					case <-prodDone:
						target = 0
					default:
					}
				}
				closingNow.Store(true)
				handed := q.CloseNow()
				prodWG.Wait()
				consWG.Wait()
				close(stop)
				joinWG.Wait()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				require.NoError(t, q.Join(ctx), "round %d", round)
				cancel()
				require.Zero(t, q.Unfinished(), "round %d", round)
				close(errs)
				for e := range errs {
					t.Fatalf("round %d: %s", round, e)
				}
				for _, v := range handed {
					got[v].Add(1)
				}
				for v := range put {
					require.Equal(t, put[v].Load(), got[v].Load(), "round %d item %d", round, v)
				}
				_, ok := q.TryGet()
				require.False(t, ok)
				require.False(t, q.TryPut(1))
			}
		})
	}
}
