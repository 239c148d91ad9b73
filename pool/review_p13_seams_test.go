package pool_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/pool"
	"github.com/ctxsync/ctxsync/retry"
)

// TestReviewP13_SeamsGroupRetryBreakerClose: the seams README suggests, all
// at once: group workers sharing a pool, each retrying With over it, a
// breaker guarding New against a backend that goes down and back, workers
// that give up, and a Close with a short deadline midway. Nothing is lost or
// counted twice: every Acquire that returned a resource is in AcquireCount
// and told to OnAcquire once, none returns one after Close has returned nil,
// every value made is closed once, under one of the Closed counters, and
// the pool ends empty. (It held; it pins the seams.)
func TestReviewP13_SeamsGroupRetryBreakerClose(t *testing.T) {
	for seed := range 30 {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 13))
			var mu sync.Mutex // guards alive, closed and next
			alive, closed, next := map[int]bool{}, map[int]int{}, 0
			var down atomic.Bool
			var told atomic.Int64
			p, err := pool.New(pool.Config[int]{
				MaxSize: 3,
				Breaker: breaker.New(breaker.Settings{FailureThreshold: 3, OpenTimeout: 50 * time.Millisecond}),
				New: func(ctx context.Context) (int, error) {
					time.Sleep(time.Millisecond)
					if down.Load() {
						return 0, errors.New("backend down")
					}
					mu.Lock()
					defer mu.Unlock()
					next++
					alive[next] = true
					return next, nil
				},
				Close: func(v int) error {
					mu.Lock()
					defer mu.Unlock()
					closed[v]++
					delete(alive, v)
					return nil
				},
				HealthCheck: func(context.Context, int) error { return nil },
				MaxIdleTime: 20 * time.Millisecond,
				MaxLifetime: 70 * time.Millisecond,
				Hooks: pool.Hooks{OnAcquire: func(e pool.AcquireEvent) {
					if e.Err == nil {
						told.Add(1)
					}
				}},
			})
			if err != nil {
				t.Fatal(err)
			}
			var used atomic.Int64
			var closedClean atomic.Bool
			g, _ := group.New(context.Background(), group.Options{Limit: 4})
			policy := retry.Policy{MaxAttempts: 4, Retryable: func(err error) bool { return !errors.Is(err, pool.ErrClosed) }}
			closer := make(chan error, 1)
			closeAt, closeWithin := time.Duration(rng.IntN(40))*time.Millisecond, time.Duration(rng.IntN(5))*time.Millisecond
			go func() {
				time.Sleep(closeAt)
				ctx, cancel := context.WithTimeout(context.Background(), closeWithin)
				defer cancel()
				err := p.Close(ctx)
				// A Close that gave up has closed the resources out,
				// among them one an Acquire under way may still return
				// (see Close); one that returned nil waited for them all.
				closedClean.Store(err == nil)
				closer <- err
			}()
			for i := range 40 {
				wait := time.Duration(rng.IntN(30)) * time.Millisecond
				hold := time.Duration(rng.IntN(10)) * time.Millisecond
				if i%10 == 5 {
					down.Store(!down.Load())
				}
				g.Go(func(ctx context.Context) error {
					ctx, cancel := context.WithTimeout(ctx, wait)
					defer cancel()
					_, _ = retry.Do(ctx, policy, func(ctx context.Context) (int, error) {
						return 0, p.With(ctx, func(int) error {
							used.Add(1)
							if closedClean.Load() {
								t.Error("a resource handed out after Close returned nil")
							}
							time.Sleep(hold)
							return nil
						})
					})
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if err := <-closer; err != nil && err != context.DeadlineExceeded {
				t.Fatalf("Close = %v", err)
			}
			synctest.Wait() // the hooks of the calls to New still telling
			s := p.Stats()
			if s.AcquireCount != used.Load() || told.Load() != used.Load() {
				t.Errorf("AcquireCount %d, told to OnAcquire %d, resources used %d", s.AcquireCount, told.Load(), used.Load())
			}
			if s.Total != 0 || s.Waiting != 0 {
				t.Errorf("the pool is not empty after Close: %+v", s)
			}
			if s.Created != s.ClosedIdle+s.ClosedLifetime+s.ClosedHealth+s.ClosedDestroy+s.ClosedPool {
				t.Errorf("made and closed do not add up: %+v", s)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(alive) != 0 || int64(next) != s.Created {
				t.Errorf("values left open %v; made %d, Created %d", alive, next, s.Created)
			}
			for v := 1; v <= next; v++ {
				if closed[v] != 1 {
					t.Errorf("value %d closed %d times", v, closed[v])
				}
			}
		})
	}
}
