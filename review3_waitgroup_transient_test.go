package ctxsync_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ctxsync/ctxsync"
)

// An Add that would take the counter out of range used to add first and take
// the delta back after: in between, every other goroutine saw the counter out
// of range. Now it panics before it changes anything.
//
// (A test that a balanced Add(1)/Done never panics beside a misused Add(-2)
// was dropped: when the counter is 2, Add(-2) is no misuse at that moment, and
// the Done after it rightly panics; no WaitGroup can tell the two apart.)

// The same window makes Wait return nil though the counter was never zero:
// a task is in flight throughout, and only a misused Add(-2) (which panics
// and is documented to leave the counter as it was) runs beside the Wait.
// Probabilistic, as above.
func TestReview3_WaitGroupWaitReturnsNilDuringMisusedAdd(t *testing.T) {
	var wg ctxsync.WaitGroup
	wg.Add(1)
	var stop atomic.Bool
	var done sync.WaitGroup
	done.Add(1)
	go func() {
		defer done.Done()
		for !stop.Load() {
			func() {
				defer func() { recover() }()
				wg.Add(-2)
			}()
		}
	}()
	spurious := 0
	for i := 0; i < 20000 && spurious == 0; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { runtime.Gosched(); cancel() }()
		if err := wg.Wait(ctx); err == nil {
			spurious++
		}
		cancel()
	}
	stop.Store(true)
	done.Wait()
	if spurious > 0 {
		t.Fatal("Wait returned nil though the counter was 1 throughout (it saw the transient -1 of a misused Add that panics)")
	}
}
