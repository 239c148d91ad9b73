package group

import (
	"context"
	"runtime"
	"testing"
)

// TestWaitOutlivesNoFreshWorker: a goroutine that the group started and that
// has not yet run (one on its way to tasks that another goroutine took) is
// waited for by Wait, so no goroutine of the group is left to run after Wait
// returns. On one processor the first goroutine runs every quick task while
// the one it started waits to run.
func TestWaitOutlivesNoFreshWorker(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	for range 20 {
		g, _ := New(context.Background(), Options{})
		for range 16 {
			g.Go(func(context.Context) error { return nil })
		}
		g.Wait()
		g.qmu.Lock()
		pending := g.pending
		g.qmu.Unlock()
		if pending {
			t.Fatal("Wait returned with a goroutine of the group yet to run")
		}
	}
}
