package group_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/group"
)

// Producers and consumers of a ctxsync.Queue in groups, every Put, Get and
// consumer round under a ctx that ends at a random moment: each item a Put
// accepted is delivered exactly once (by ForEach over All, or by a Get whose
// job, refused by a Go whose group ended, is marked done), no refused item
// is delivered, and Join ends once the queue is closed and drained.
func TestReviewS3_GroupOverQueueRandomCancellation(t *testing.T) {
	for seed := range uint64(20) {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			var rmu sync.Mutex
			randDur := func(max time.Duration) time.Duration {
				rmu.Lock()
				defer rmu.Unlock()
				return time.Duration(rng.Int64N(int64(max)))
			}
			q := ctxsync.NewQueue[int](3)
			var mu sync.Mutex
			accepted := map[int]bool{}
			delivered := map[int]int{}
			deliver := func(v int) {
				mu.Lock()
				delivered[v]++
				mu.Unlock()
			}

			prod, _ := group.New(context.Background(), group.Options{Limit: 2})
			for p := range 4 {
				_ = prod.Go(func(context.Context) error {
					for i := range 25 {
						v := p*100 + i
						ctx, cancel := context.WithTimeout(context.Background(), randDur(5*time.Millisecond))
						err := q.Put(ctx, v)
						cancel()
						if err == nil {
							mu.Lock()
							accepted[v] = true
							mu.Unlock()
						}
					}
					return nil
				})
			}
			closed := make(chan struct{})
			consumersDone := make(chan struct{})
			go func() {
				defer close(consumersDone)
				for round := 0; ; round++ {
					ctx, cancel := context.WithTimeout(context.Background(), randDur(20*time.Millisecond))
					if round%2 == 0 {
						_ = group.ForEach(ctx, q.All(ctx), 2, func(ctx context.Context, v int) error {
							defer q.TaskDone()
							deliver(v)
							time.Sleep(randDur(time.Millisecond))
							return nil
						})
					} else {
						g, gctx := group.New(ctx, group.Options{Limit: 2})
						for {
							v, err := q.Get(gctx)
							if err != nil {
								break
							}
							if g.Go(func(context.Context) error {
								defer q.TaskDone()
								deliver(v)
								return nil
							}) != nil {
								// Refused: the job is still ours.
								deliver(v)
								q.TaskDone()
								break
							}
						}
						_ = g.Wait()
					}
					cancel()
					select {
					case <-closed:
						if q.Len() == 0 {
							return // closed and drained
						}
					default:
					}
				}
			}()
			_ = prod.Wait()
			q.Close()
			close(closed)
			<-consumersDone
			jctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			if err := q.Join(jctx); err != nil {
				t.Fatalf("Join after every item was handled = %v", err)
			}
			for v := range accepted {
				if delivered[v] != 1 {
					t.Errorf("item %d accepted, delivered %d times", v, delivered[v])
				}
			}
			for v, n := range delivered {
				if !accepted[v] {
					t.Errorf("item %d delivered %d times, never accepted", v, n)
				}
			}
		})
	}
}
