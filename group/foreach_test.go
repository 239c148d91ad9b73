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

	"github.com/ctxsync/ctxsync"
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

// TestForEachPullsNoItemWithoutASlot: with every slot busy, ForEach has
// pulled only the items it runs (the settled rule allows one more), since it
// takes an item's slot before it pulls the item.
func TestForEachPullsNoItemWithoutASlot(t *testing.T) {
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
		if running.Load() != 3 || pulled.Load() != 3 {
			t.Errorf("running %d, pulled %d; want 3, 3", running.Load(), pulled.Load())
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

// TestForEachQueueShutdownLosesNoJob: ForEach over a ctxsync.Queue's All at
// shutdown. Every job is either processed by f, which marks it done, or
// handed back by CloseNow, and Join returns. (ForEach pulled a job, Go
// refused it as ctx had ended, and the job was dropped: with 100 jobs, limit
// 3 and ctx ending at 55ms, 9 were processed, 90 handed back, one lost, and
// Join waited for it for ever.)
func TestForEachQueueShutdownLosesNoJob(t *testing.T) {
	// ctx ends while ForEach waits for a slot, every slot busy.
	t.Run("ctx ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := fullQueue(t, 100)
			ctx, cancel := context.WithTimeout(context.Background(), 55*time.Millisecond)
			defer cancel()
			var processed atomic.Int32
			err := group.ForEach(ctx, q.All(ctx), 3, func(ctx context.Context, job int) error {
				defer q.TaskDone()
				time.Sleep(20 * time.Millisecond) // a job, once begun, is finished
				processed.Add(1)
				return nil
			})
			if err != context.DeadlineExceeded {
				t.Errorf("ForEach = %v, want context.DeadlineExceeded", err)
			}
			checkShutdown(t, q, int(processed.Load()), func() int { return 100 })
		})
	})
	// A job fails while ForEach waits in the queue's Get for the next
	// job, which comes after the failure: f gets it, with its ctx done.
	t.Run("failure", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := ctxsync.NewQueue[int](0)
			boom := errors.New("boom")
			var put atomic.Int32
			produced := make(chan struct{})
			go func() {
				defer close(produced)
				for i := range 10 {
					if q.Put(context.Background(), i) != nil {
						return // closed
					}
					put.Add(1)
					time.Sleep(10 * time.Millisecond)
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var processed, lateSeen atomic.Int32
			err := group.ForEach(ctx, q.All(ctx), 2, func(ctx context.Context, job int) error {
				defer q.TaskDone()
				if ctx.Err() != nil {
					lateSeen.Add(1) // pulled as the group failed: seen, and done
					return ctx.Err()
				}
				processed.Add(1)
				if job == 3 {
					time.Sleep(5 * time.Millisecond) // fails while ForEach waits for job 4
					return boom
				}
				return nil
			})
			if err != boom {
				t.Errorf("ForEach = %v, want %v", err, boom)
			}
			if lateSeen.Load() != 1 {
				t.Errorf("f saw %d jobs with its ctx done, want 1 (job 4)", lateSeen.Load())
			}
			checkShutdown(t, q, int(processed.Load()+lateSeen.Load()), func() int {
				<-produced // its next Put failed: the queue is closed
				return int(put.Load())
			})
		})
	})
}

// fullQueue returns a Queue holding the jobs 0..n-1.
func fullQueue(t *testing.T, n int) *ctxsync.Queue[int] {
	t.Helper()
	q := ctxsync.NewQueue[int](0)
	for i := range n {
		if err := q.Put(context.Background(), i); err != nil {
			t.Fatalf("Put = %v", err)
		}
	}
	return q
}

// checkShutdown closes q with CloseNow and checks that every one of the
// jobs put (counted once the queue is closed) was either handled, and
// marked done, or handed back, and that Join returns.
func checkShutdown(t *testing.T, q *ctxsync.Queue[int], handled int, nPut func() int) {
	t.Helper()
	back := q.CloseNow()
	put := nPut()
	if handled+len(back) != put {
		t.Errorf("%d jobs handled by f, %d handed back by CloseNow: %d of %d lost",
			handled, len(back), put-handled-len(back), put)
	}
	if n := q.Unfinished(); n != 0 {
		t.Errorf("Unfinished() = %d after CloseNow, want 0", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := q.Join(ctx); err != nil {
		t.Errorf("Join = %v, want nil", err)
	}
}

// TestForEachSeqStoppedByCtxIsCtxErr: a seq that stops because ctx ended, as
// a Queue's All does while it waits for a job, makes ForEach return
// ctx.Err(), as a ctx that ends while ForEach waits for a slot does. (It
// returned nil, as if the stream had run out.)
func TestForEachSeqStoppedByCtxIsCtxErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := fullQueue(t, 2)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var processed atomic.Int32
		err := group.ForEach(ctx, q.All(ctx), 4, func(ctx context.Context, job int) error {
			defer q.TaskDone()
			processed.Add(1)
			return nil
		})
		if err != context.DeadlineExceeded {
			t.Errorf("ForEach = %v, want context.DeadlineExceeded", err)
		}
		checkShutdown(t, q, int(processed.Load()), func() int { return 2 })
	})
}

// TestForEachGoexitIsErrGoexit: a call of f that ends in runtime.Goexit
// fails ForEach with ErrGoexit, as Go and Map do, and stops the pulling.
func TestForEachGoexitIsErrGoexit(t *testing.T) {
	var pulled atomic.Int32
	err := group.ForEach(context.Background(), tracked(100, &pulled), 1, func(_ context.Context, x int) error {
		if x == 2 {
			runtime.Goexit()
		}
		return nil
	})
	if err != group.ErrGoexit {
		t.Errorf("ForEach = %v, want ErrGoexit", err)
	}
	if pulled.Load() != 3 {
		t.Errorf("ForEach pulled %d items, want 3: none after the Goexit", pulled.Load())
	}
}
