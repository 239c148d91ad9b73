package group_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// tracked yields 0, 1, ..., n-1 and counts what it yielded.
func tracked(n int, pulled *atomic.Int32) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			pulled.Add(1)
			if !yield(i) {
				return
			}
		}
	}
}

// TestForEachPullsAtMostOneAhead: with every slot busy, ForEach has pulled
// one item more than it runs, not more.
func TestForEachPullsAtMostOneAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pulled, running atomic.Int32
		release := make(chan struct{})
		done := make(chan error)
		go func() {
			done <- group.ForEach(context.Background(), tracked(100, &pulled), 3, func(ctx context.Context, _ int) error {
				running.Add(1)
				<-release
				running.Add(-1)
				return nil
			})
		}()
		synctest.Wait()
		if running.Load() != 3 || pulled.Load() != 4 {
			t.Errorf("running %d, pulled %d; want 3, 4", running.Load(), pulled.Load())
		}
		close(release)
		if err := <-done; err != nil {
			t.Errorf("ForEach = %v", err)
		}
		if pulled.Load() != 100 {
			t.Errorf("pulled %d, want 100", pulled.Load())
		}
	})
}

// TestForEachStopsAtFirstError: no item is pulled after the failure, with an
// endless seq; the items in flight have returned when ForEach returns.
func TestForEachStopsAtFirstError(t *testing.T) {
	boom := errors.New("boom")
	var inFlight atomic.Int32
	endless := func(yield func(int) bool) {
		for i := 0; ; i++ {
			if !yield(i) {
				return
			}
		}
	}
	err := group.ForEach(context.Background(), endless, 4, func(ctx context.Context, x int) error {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		if x == 10 {
			return boom
		}
		runtime.Gosched()
		return nil
	})
	if err != boom {
		t.Errorf("ForEach = %v, want %v", err, boom)
	}
	if inFlight.Load() != 0 {
		t.Errorf("%d items in flight after ForEach returned", inFlight.Load())
	}
}

func TestForEachCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var done atomic.Int32
		err := group.ForEach(ctx, count(10), 2, func(ctx context.Context, _ int) error {
			time.Sleep(2 * time.Second)
			done.Add(1)
			return nil
		})
		if err != context.DeadlineExceeded {
			t.Errorf("ForEach = %v, want context.DeadlineExceeded", err)
		}
		if done.Load() != 6 { // started at 0s, 2s, 4s: two each
			t.Errorf("%d items done, want 6", done.Load())
		}
	})
	// An item that fails after ctx ended: ForEach says ctx ended.
	ctx, cancel := context.WithCancel(context.Background())
	err := group.ForEach(ctx, count(1), 0, func(ctx context.Context, _ int) error {
		cancel()
		return fmt.Errorf("wrapped: %w", ctx.Err())
	})
	if err != context.Canceled {
		t.Errorf("ForEach = %v, want context.Canceled unwrapped", err)
	}
	if err := group.ForEach(testutil.Cancelled(), count(1), 0, func(context.Context, int) error {
		t.Error("f ran with a done ctx")
		return nil
	}); err != context.Canceled {
		t.Errorf("ForEach(done ctx) = %v, want context.Canceled", err)
	}
}

func TestForEachAllSucceed(t *testing.T) {
	var mu sync.Mutex
	var seen []int
	err := group.ForEach(context.Background(), count(50), 0, func(_ context.Context, x int) error {
		mu.Lock()
		seen = append(seen, x)
		mu.Unlock()
		return nil
	})
	slices.Sort(seen)
	if err != nil || len(seen) != 50 || seen[49] != 49 {
		t.Errorf("ForEach = %v, saw %d items", err, len(seen))
	}
}

func TestForEachPanicInTaskRaised(t *testing.T) {
	v := mustPanic(t, "ForEach", func() {
		group.ForEach(context.Background(), count(5), 2, func(_ context.Context, x int) error {
			if x == 3 {
				panic("three")
			}
			return nil
		})
	})
	if p, ok := v.(*group.PanicError); !ok || p.Value != "three" {
		t.Errorf("ForEach panicked with %v, want a *PanicError of three", v)
	}
}

// TestForEachPanicInSeqWaitsForItems: a panic of the iterator goes on up, but
// only after the items in flight have returned (their ctx cancelled).
func TestForEachPanicInSeqWaitsForItems(t *testing.T) {
	var inFlight atomic.Int32
	seq := func(yield func(int) bool) {
		yield(1)
		yield(2)
		panic("seq broke")
	}
	v := mustPanic(t, "ForEach", func() {
		group.ForEach(context.Background(), seq, 0, func(ctx context.Context, _ int) error {
			inFlight.Add(1)
			defer inFlight.Add(-1)
			<-ctx.Done()
			return nil
		})
	})
	if v != "seq broke" {
		t.Errorf("ForEach panicked with %v, want the seq's panic", v)
	}
	if inFlight.Load() != 0 {
		t.Errorf("%d items in flight after ForEach returned", inFlight.Load())
	}
}
