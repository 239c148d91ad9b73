package group_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// Producers and ForEach consumers of a Queue, some of whose tasks panic,
// while CloseNow comes at a random moment without waiting for the workers:
// every item a Put accepted is either delivered once or handed back by
// CloseNow once, never both, and Join returns.
func TestSeams15_QueueCloseNowMidFlightWithPanics(t *testing.T) {
	for seed := range uint64(40) {
		synctest.Test(t, func(t *testing.T) {
			rnd := testutil.LockedRand(seed, 15)
			q := ctxsync.NewQueue[int](2)
			var mu sync.Mutex
			accepted := map[int]bool{}
			seen := map[int]int{}
			deliver := func(v int) {
				mu.Lock()
				seen[v]++
				mu.Unlock()
			}
			prod, _ := group.New(context.Background(), group.Options{})
			for p := range 3 {
				_ = prod.Go(func(context.Context) error {
					for i := range 30 {
						v := p*1000 + i
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rnd(int64(3*time.Millisecond))))
						err := q.Put(ctx, v)
						cancel()
						if err == nil {
							mu.Lock()
							accepted[v] = true
							mu.Unlock()
						} else if !errors.Is(err, ctxsync.ErrClosed) && !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("Put: %v", err)
						}
					}
					return nil
				})
			}
			stop, cancelStop := context.WithCancel(context.Background())
			consumers, _ := group.New(context.Background(), group.Options{})
			for range 2 {
				_ = consumers.Go(func(context.Context) error {
					for stop.Err() == nil {
						func() {
							defer func() { _ = recover() }()
							pull, cancel := context.WithTimeout(stop, time.Duration(rnd(int64(5*time.Millisecond))))
							defer cancel()
							_ = group.ForEach(pull, q.All(pull), 2, func(ctx context.Context, v int) error {
								defer q.TaskDone()
								deliver(v)
								time.Sleep(time.Duration(rnd(int64(time.Millisecond))))
								if rnd(10) == 0 {
									panic("boom")
								}
								return nil
							})
						}()
					}
					return nil
				})
			}
			time.Sleep(time.Duration(rnd(int64(30 * time.Millisecond))))
			cancelStop()
			back := q.CloseNow()
			for _, v := range back {
				deliver(v)
			}
			_ = prod.Wait()
			_ = consumers.Wait()
			jctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			if err := q.Join(jctx); err != nil {
				t.Fatalf("Join: %v (unfinished %d)", err, q.Unfinished())
			}
			for v := range accepted {
				if seen[v] != 1 {
					t.Errorf("item %d accepted, seen %d times", v, seen[v])
				}
			}
			for v, n := range seen {
				if !accepted[v] {
					t.Errorf("item %d seen %d times, never accepted", v, n)
				}
			}
			if g, p := q.Getters(), q.Putters(); g != 0 || p != 0 {
				t.Errorf("Getters %d Putters %d after all ended", g, p)
			}
		})
	}
}
