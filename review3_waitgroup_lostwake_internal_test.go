package ctxsync

import (
	"context"
	"math"
	"runtime"
	"sync"
	"testing"
)

// An Add that overflows adds first and takes its delta back with a plain
// atomic add. If the task's legitimate Done lands in between, Done sees a
// positive (wrapped) counter and takes the fast path; the take-back then
// brings the counter to zero with the waiters flag set, and wakes nobody.
// The waiter stays queued with the counter at zero for good: a lost wake-up
// (a Wait with a background ctx hangs forever). Probabilistic: the window is
// two consecutive atomics; the test checks the stable state after each round.
func TestReview3_WaitGroupOverflowingAddLosesWakeup(t *testing.T) {
	for round := 0; round < 20000; round++ {
		var wg WaitGroup
		wg.Add(1)
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan error, 1)
		go func() { res <- wg.Wait(ctx) }()
		for {
			wg.q.Lock()
			n := wg.q.Len()
			wg.q.Unlock()
			if n == 1 {
				break
			}
			runtime.Gosched()
		}
		var both sync.WaitGroup
		both.Add(2)
		go func() {
			defer both.Done()
			defer func() { recover() }()
			wg.Add(math.MaxInt32) // misuse: overflows, must panic and leave the counter as it was
		}()
		go func() { defer both.Done(); wg.Done() }() // the task ends: the counter is 0
		both.Wait()
		wg.q.Lock()
		queued := wg.q.Len()
		wg.q.Unlock()
		if wg.Count() == 0 && queued == 1 && wg.state.Load()&wgWaiters != 0 {
			// Confirm it is stuck for good: nothing else will zero the counter.
			cancel()
			<-res
			t.Fatalf("round %d: counter is 0 but the Wait stayed queued (lost wake-up); only its ctx's end released it", round)
		}
		if err := <-res; err != nil {
			t.Fatalf("round %d: Wait = %v", round, err)
		}
		cancel()
	}
}
