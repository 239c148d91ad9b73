package retry

import (
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestRV16aBudgetHammer: goroutines make calls that all fail, on a shared
// Budget, over virtual seconds: each call's first attempt is deposited, and
// a quarter of them taken back at once (a request that met a mistake), the
// rest try up to three retries or hedges, a wait of their own between
// each. Against what was really done: in every window of 10 seconds, the
// retries let through are at most ratio × the first attempts that stayed
// counted, over the window and the second before it, and a batch (first
// attempts are counted in batches of 64, a little early or late), plus the
// reserve.
func TestRV16aBudgetHammer(t *testing.T) {
	for seed := range uint64(testutil.HammerRounds(4)) {
		synctest.Test(t, func(t *testing.T) {
			const ratio, minPerSecond = 0.5, 0.2
			b := NewBudget(ratio, minPerSecond)
			var mu sync.Mutex
			net, granted := map[int64]int{}, map[int64]int{}
			var wg sync.WaitGroup
			const goroutines, calls = 8, 150
			for g := range uint64(goroutines) {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, g))
					for range calls {
						b.deposit()
						mu.Lock()
						net[second(clock.Now())]++
						mu.Unlock()
						if r.IntN(4) == 0 {
							b.undeposit()
							mu.Lock()
							net[second(clock.Now())]--
							mu.Unlock()
						} else {
							for range 3 {
								time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond)
								if !b.withdraw() {
									break
								}
								mu.Lock()
								granted[second(clock.Now())]++
								mu.Unlock()
							}
						}
						time.Sleep(time.Duration(r.IntN(1500)) * time.Millisecond)
					}
				})
			}
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			for s := range granted {
				retries, first := 0, 0
				for k := s - budgetBuckets + 1; k <= s; k++ {
					retries += granted[k]
				}
				for k := s - budgetBuckets; k <= s; k++ {
					first += net[k]
				}
				if limit := ratio*float64(max(first, 0)+depositBatch) + minPerSecond*budgetBuckets; float64(retries) > limit {
					t.Fatalf("second %d: %d retries in the window, above %v (%d first attempts)", s, retries, limit, first)
				}
			}
		})
	}
}
