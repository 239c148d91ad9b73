package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Hedged calls sharing a Budget, from many goroutines, with ctxs that end at
// random and copies that succeed, fail, fail Permanent, panic or call
// runtime.Goexit: every copy sent was withdrawn from the Budget, the
// withdrawals never pass its share of the calls counted, and no copy is left
// running when the bubble ends.
func TestBudgetHedgeHammer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { budgetHedgeHammer(t) })
}

func budgetHedgeHammer(t *testing.T) {
	const goroutines, calls = 8, 300
	bud := NewBudget(0.5, 0)
	var copies atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(300))*time.Microsecond)
				done := make(chan struct{})
				go func() {
					defer close(done)
					defer func() { _ = recover() }()
					var n atomic.Int32
					_, _ = DoHedged(ctx, Hedge{Delay: time.Duration(1+rand.IntN(50)) * time.Microsecond, MaxHedges: NoLimit, Budget: bud}, func(actx context.Context) (int, error) {
						if n.Add(1) > 1 {
							copies.Add(1)
						}
						select {
						case <-time.After(time.Duration(rand.IntN(200)) * time.Microsecond):
						case <-actx.Done():
							// A copy that lost is not waited for: it
							// heeds its ctx, or the bubble would end
							// with it blocked.
							return 0, actx.Err()
						}
						switch rand.IntN(10) {
						case 0:
							if n.Load() > 1 {
								panic("copy")
							}
						case 1:
							if n.Load() > 1 {
								runtime.Goexit()
							}
						case 2:
							return 0, Permanent(errors.New("p"))
						case 3, 4:
							return 0, errors.New("x")
						}
						return 1, actx.Err()
					})
				}()
				<-done
				cancel()
			}
		}()
	}
	wg.Wait()
	synctest.Wait() // the copies that lost have returned
	bud.mu.Lock()
	var first, retries int64
	for _, bk := range bud.buckets {
		first += bk.first
		retries += bk.retries
	}
	first += bud.pending.Load()
	bud.mu.Unlock()
	// A call whose ctx ended before it began counts nothing.
	if first > goroutines*calls || float64(retries) > 0.5*float64(first) || copies.Load() > retries {
		t.Fatalf("%d calls counted (of %d made), %d withdrawals, %d copies run: want withdrawals within half the calls, and a withdrawal per copy", first, goroutines*calls, retries, copies.Load())
	}
}
