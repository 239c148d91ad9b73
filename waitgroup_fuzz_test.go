package ctxsync_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// FuzzWaitGroupModel checks a WaitGroup against a plain counter and a list of
// waiters (see model_test.go): after each step, every Wait's outcome and
// Count. Each step is two bytes: an operation and its argument (a delta, or
// which waiter gives up).
func FuzzWaitGroupModel(f *testing.F) {
	// Waiters woken by the zero; an Add right after does not hold them back.
	f.Add([]byte{0, 2, 1, 0, 1, 0, 2, 0, 2, 0, 0, 1, 2, 0, 2, 0})
	// A waiter gives up; a Done below zero panics; a Wait at zero returns.
	f.Add([]byte{0, 1, 1, 0, 1, 0, 3, 0, 2, 0, 2, 0, 1, 0, 4, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			var wg ctxsync.WaitGroup
			var count int
			var queue waitQueue
			var all []*modelWaiter
			zero := func() { // the counter is zero: every waiter returns nil
				for len(queue) > 0 {
					queue.settle(0, nil)
				}
			}
			for ; len(script) >= 2; script = script[2:] {
				switch op, arg := script[0]%5, int(script[1]); op {
				case 0: // Add(1..4)
					wg.Add(arg%4 + 1)
					count += arg%4 + 1
				case 1, 2: // Done
					if count == 0 {
						require.PanicsWithValue(t, "ctxsync: negative WaitGroup counter", wg.Done)
						continue
					}
					wg.Done()
					if count--; count == 0 {
						zero()
					}
				case 3: // Wait
					mw := startWaiter(t.Context(), "Wait", wg.Wait)
					all = append(all, mw)
					queue = append(queue, mw)
					if count == 0 {
						zero()
					}
				case 4: // a waiter gives up
					if !queue.cancel(arg) {
						continue
					}
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				require.Equal(t, count, wg.Count())
			}
			cancelAll(all)
		})
	})
}
