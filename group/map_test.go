package group_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestMapResultsInOrder(t *testing.T) {
	items := make([]int, 100)
	for i := range items {
		items[i] = i
	}
	for _, limit := range []int{0, 1, 3, 100, 1000} {
		got, err := group.Map(context.Background(), items, limit, func(_ context.Context, x int) (string, error) {
			runtime.Gosched()
			return fmt.Sprint(x), nil
		})
		if err != nil {
			t.Fatalf("limit %d: Map = %v", limit, err)
		}
		for i, s := range got {
			if s != fmt.Sprint(i) {
				t.Fatalf("limit %d: result %d = %q, want %q", limit, i, s, fmt.Sprint(i))
			}
		}
	}
}

func TestMapEmpty(t *testing.T) {
	got, err := group.Map(context.Background(), nil, 0, double)
	if err != nil || len(got) != 0 {
		t.Errorf("Map(nil items) = %v, %v; want empty, nil", got, err)
	}
}

func TestMapLimitBoundsCalls(t *testing.T) {
	var running, most atomic.Int32
	group.Map(context.Background(), make([]int, 200), 4, func(context.Context, int) (int, error) {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		runtime.Gosched()
		running.Add(-1)
		return 0, nil
	})
	if most.Load() > 4 {
		t.Errorf("%d calls at once under limit 4", most.Load())
	}
}

// TestMapFirstErrorCancelsRest: the first error cancels the ctx of the calls
// in flight, no item starts after it, and it is Map's error.
func TestMapFirstErrorCancelsRest(t *testing.T) {
	boom := errors.New("boom")
	var started atomic.Int32
	got, err := group.Map(context.Background(), []int{0, 1, 2, 3, 4, 5}, 1, func(ctx context.Context, x int) (int, error) {
		started.Add(1)
		if x == 2 {
			return 0, boom
		}
		return x, nil
	})
	if err != boom || got != nil {
		t.Errorf("Map = %v, %v; want nil, %v", got, err, boom)
	}
	if started.Load() != 3 {
		t.Errorf("%d items started under limit 1, want 3 (none after the failure)", started.Load())
	}

	// Without a limit, the calls in flight see their ctx end.
	got, err = group.Map(context.Background(), []int{0, 1, 2}, 0, func(ctx context.Context, x int) (int, error) {
		if x == 1 {
			return 0, boom
		}
		<-ctx.Done()
		return 0, ctx.Err()
	})
	if err != boom || got != nil {
		t.Errorf("Map = %v, %v; want nil, %v", got, err, boom)
	}
}

func TestMapCtxEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var ran atomic.Int32
		got, err := group.Map(ctx, make([]int, 10), 2, func(ctx context.Context, _ int) (int, error) {
			ran.Add(1)
			time.Sleep(3 * time.Second) // ignores ctx: ends well
			return 1, nil
		})
		if err != context.DeadlineExceeded || got != nil {
			t.Errorf("Map = %v, %v; want nil, context.DeadlineExceeded", got, err)
		}
		if ran.Load() != 8 { // 4 rounds of 2 started by 10s, at 0s 3s 6s 9s
			t.Errorf("%d items ran, want 8", ran.Load())
		}
	})
	// A call that fails with a wrapped error after ctx ended: Map says ctx ended.
	ctx, cancel := context.WithCancel(context.Background())
	_, err := group.Map(ctx, []int{1}, 0, func(ctx context.Context, _ int) (int, error) {
		cancel()
		return 0, fmt.Errorf("fetch: %w", ctx.Err())
	})
	if err != context.Canceled {
		t.Errorf("Map = %v, want context.Canceled unwrapped", err)
	}
}

func TestMapDoneCtxRunsNothing(t *testing.T) {
	for _, items := range [][]int{nil, {1, 2}} {
		got, err := group.Map(testutil.Cancelled(), items, 0, func(context.Context, int) (int, error) {
			t.Error("f ran with a done ctx")
			return 0, nil
		})
		if err != context.Canceled || got != nil {
			t.Errorf("Map = %v, %v; want nil, context.Canceled", got, err)
		}
	}
}

func TestMapPanicRaised(t *testing.T) {
	v := mustPanic(t, "Map", func() {
		group.Map(context.Background(), []int{1, 2, 3}, 2, func(ctx context.Context, x int) (int, error) {
			if x == 2 {
				panic("two")
			}
			return x, nil
		})
	})
	if p, ok := v.(*group.PanicError); !ok || p.Value != "two" {
		t.Errorf("Map panicked with %v, want a *PanicError of two", v)
	}
}

func TestMapAllEveryResultAndError(t *testing.T) {
	e1, e3 := errors.New("e1"), errors.New("e3")
	for _, limit := range []int{0, 1, 2} {
		res, errs := group.MapAll(context.Background(), []int{0, 1, 2, 3}, limit, func(ctx context.Context, x int) (int, error) {
			switch x {
			case 1:
				return -1, e1
			case 3:
				return -3, e3
			}
			return x * 10, nil
		})
		if fmt.Sprint(res) != "[0 -1 20 -3]" {
			t.Errorf("limit %d: results %v, want [0 -1 20 -3]", limit, res)
		}
		if !slices.Equal(errs, []error{nil, e1, nil, e3}) {
			t.Errorf("limit %d: errors %v, want [nil e1 nil e3]", limit, errs)
		}
	}
}

func TestMapAllNilErrorsWhenNothingFailed(t *testing.T) {
	res, errs := group.MapAll(context.Background(), []int{1, 2, 3}, 2, double)
	if errs != nil || fmt.Sprint(res) != "[2 4 6]" {
		t.Errorf("MapAll = %v, %v; want [2 4 6], nil", res, errs)
	}
	res, errs = group.MapAll(context.Background(), []int(nil), 2, double)
	if errs != nil || len(res) != 0 {
		t.Errorf("MapAll(no items) = %v, %v; want [], nil", res, errs)
	}
	res, errs = group.MapAll(testutil.Cancelled(), []int(nil), 2, double)
	if errs != nil || len(res) != 0 {
		t.Errorf("MapAll(no items, done ctx) = %v, %v; want [], nil", res, errs)
	}
}

func TestMapAllCtxEnds(t *testing.T) {
	res, errs := group.MapAll(testutil.Cancelled(), []int{1, 2}, 0, func(context.Context, int) (int, error) {
		t.Error("f ran with a done ctx")
		return 0, nil
	})
	if !slices.Equal(errs, []error{context.Canceled, context.Canceled}) || fmt.Sprint(res) != "[0 0]" {
		t.Errorf("MapAll(done ctx) = %v, %v; want [0 0], [Canceled Canceled]", res, errs)
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, errs := group.MapAll(ctx, []int{1, 2, 3, 4}, 1, func(ctx context.Context, x int) (int, error) {
			time.Sleep(3 * time.Second)
			return x, nil
		})
		// Items 1 and 2 start at 0s and 3s; 3 and 4 would start after 5s.
		if fmt.Sprint(res) != "[1 2 0 0]" || !slices.Equal(errs, []error{nil, nil, context.DeadlineExceeded, context.DeadlineExceeded}) {
			t.Errorf("MapAll = %v, %v", res, errs)
		}
	})
}

func TestMapAllPanicRaised(t *testing.T) {
	v := mustPanic(t, "MapAll", func() {
		group.MapAll(context.Background(), []int{1, 2}, 0, func(ctx context.Context, x int) (int, error) {
			if x == 2 {
				panic(x)
			}
			return x, nil
		})
	})
	if p, ok := v.(*group.PanicError); !ok || p.Value != 2 {
		t.Errorf("MapAll panicked with %v, want a *PanicError of 2", v)
	}
}

// TestMapGoexitInCaller: Map runs a worker in the caller's goroutine; if f
// calls runtime.Goexit there, the caller ends, but only after the other
// workers have returned. If it is another worker, Map returns ErrGoexit.
func TestMapGoexitInCaller(t *testing.T) {
	for range 20 {
		var calls, inFlight atomic.Int32
		done := make(chan error, 1)
		go func() {
			var err error
			defer func() { done <- err }()
			_, err = group.Map(context.Background(), []int{1, 2}, 2, func(ctx context.Context, _ int) (int, error) {
				if calls.Add(1) == 1 {
					inFlight.Add(1)
					defer inFlight.Add(-1)
					<-ctx.Done()
					return 0, ctx.Err()
				}
				for inFlight.Load() == 0 {
					runtime.Gosched()
				}
				runtime.Goexit()
				return 0, nil
			})
		}()
		if err := <-done; err != nil && err != group.ErrGoexit {
			t.Errorf("Map = %v, want ErrGoexit or the caller ended", err)
		}
		if inFlight.Load() != 0 {
			t.Error("a worker still ran when the caller of Map ended")
		}
	}
	// Limit 1: f runs in the caller only.
	done := make(chan struct{})
	go func() {
		defer close(done)
		group.MapAll(context.Background(), []int{1}, 1, func(context.Context, int) (int, error) {
			runtime.Goexit()
			return 0, nil
		})
		t.Error("MapAll returned after its f called runtime.Goexit in the caller")
	}()
	<-done
}

// TestMapAllGoexitInWorkerIsErrGoexit: an item whose f calls runtime.Goexit
// in one of MapAll's own goroutines failed, as Map and Go say: its error is
// ErrGoexit, at its index, and the other items are not disturbed. (MapAll
// reported no error for it.)
func TestMapAllGoexitInWorkerIsErrGoexit(t *testing.T) {
	for _, limit := range []int{0, 2, 3} {
		started := make(chan struct{})
		res, errs := group.MapAll(context.Background(), []int{0, 1, 2}, limit, func(ctx context.Context, x int) (int, error) {
			switch x {
			case 0:
				<-started // keeps the caller's worker here: item 1 runs in another goroutine
			case 1:
				close(started)
				runtime.Goexit()
			}
			return x + 10, nil
		})
		if !slices.Equal(errs, []error{nil, group.ErrGoexit, nil}) {
			t.Errorf("limit %d: MapAll errors = %v, want [nil ErrGoexit nil]", limit, errs)
		}
		if !slices.Equal(res, []int{10, 0, 12}) {
			t.Errorf("limit %d: MapAll results = %v, want [10 0 12]", limit, res)
		}
	}
}

// TestMapReachesLimit: the workers start one another, so slow items keep
// limit of them busy from the start: 8 items of 1s under limit 4 take 2s.
func TestMapReachesLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, limit := range []int{0, 1, 4, 8} {
			start := time.Now()
			sleep := func(context.Context, int) (int, error) { time.Sleep(time.Second); return 0, nil }
			group.Map(context.Background(), make([]int, 8), limit, sleep)
			want := 8 * time.Second / time.Duration(max(1, min(limit, 8)))
			if limit == 0 {
				want = time.Second
			}
			if got := time.Since(start); got != want {
				t.Errorf("Map, limit %d: %v, want %v", limit, got, want)
			}
			start = time.Now()
			group.MapAll(context.Background(), make([]int, 8), limit, sleep)
			if got := time.Since(start); got != want {
				t.Errorf("MapAll, limit %d: %v, want %v", limit, got, want)
			}
		}
	})
}
