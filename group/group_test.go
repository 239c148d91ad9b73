package group_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

func TestFailFastFirstErrorCancelsAndIsWaitsResult(t *testing.T) {
	g, ctx := group.New(context.Background(), group.Options{})
	boom := errors.New("boom")
	started := make(chan struct{})
	if err := g.Go(func(ctx context.Context) error {
		close(started)
		<-ctx.Done() // ends only because the other task fails
		return ctx.Err()
	}); err != nil {
		t.Fatalf("Go = %v, want nil", err)
	}
	<-started
	g.Go(func(context.Context) error { return boom })
	if err := g.Wait(); err != boom {
		t.Errorf("Wait = %v, want %v", err, boom)
	}
	if got := context.Cause(ctx); got != boom {
		t.Errorf("Cause(group ctx) = %v, want %v", got, boom)
	}
}

func TestCollectAllJoinsEveryError(t *testing.T) {
	g, ctx := group.New(context.Background(), group.Options{CollectAll: true, Limit: 2})
	e1, e2 := errors.New("e1"), errors.New("e2")
	var ran atomic.Int32
	for _, err := range []error{e1, nil, e2, nil} {
		g.Go(func(ctx context.Context) error {
			ran.Add(1)
			if ctx.Err() != nil {
				t.Error("the group's ctx ended although CollectAll")
			}
			return err
		})
	}
	err := g.Wait()
	if !errors.Is(err, e1) || !errors.Is(err, e2) {
		t.Errorf("Wait = %v, want both e1 and e2", err)
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 2 {
		t.Errorf("Wait joined %d errors, want 2", n)
	}
	if ran.Load() != 4 {
		t.Errorf("%d tasks ran, want 4", ran.Load())
	}
	if ctx.Err() == nil {
		t.Error("the group's ctx is live after Wait")
	}
}

// TestWaitCollectAllReturnsSameValue: Wait returns the identical error each
// time, as its doc says, with CollectAll too (it joined the errors anew on
// each call), whether the calls follow one another or race.
func TestWaitCollectAllReturnsSameValue(t *testing.T) {
	for _, collect := range []bool{false, true} {
		g, _ := group.New(context.Background(), group.Options{CollectAll: collect})
		for i := range 3 {
			g.Go(func(context.Context) error { return fmt.Errorf("task %d", i) })
		}
		errs := make([]error, 4)
		var waits sync.WaitGroup
		for i := range errs {
			waits.Go(func() { errs[i] = g.Wait() })
		}
		waits.Wait()
		again := g.Wait()
		for i, err := range errs {
			if err == nil || err != again {
				t.Errorf("CollectAll %v: Wait #%d = %p (%v), a later Wait = %p; want one error value", collect, i, err, err, again)
			}
		}
	}
}

func TestCollectAllNoErrorIsNil(t *testing.T) {
	g, _ := group.New(context.Background(), group.Options{CollectAll: true})
	g.Go(func(context.Context) error { return nil })
	if err := g.Wait(); err != nil {
		t.Errorf("Wait = %v, want nil", err)
	}
}

func TestEmptyGroupWait(t *testing.T) {
	g, ctx := group.New(context.Background(), group.Options{Limit: 3})
	if err := g.Wait(); err != nil {
		t.Errorf("Wait = %v, want nil", err)
	}
	if context.Cause(ctx) != context.Canceled {
		t.Errorf("Cause after Wait = %v, want context.Canceled", context.Cause(ctx))
	}
}

// TestGoWaitsFIFOForSlot: callers of Go waiting for a slot get one in the
// order they came.
func TestGoWaitsFIFOForSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := group.New(context.Background(), group.Options{Limit: 1})
		release := make(chan struct{})
		g.Go(func(context.Context) error { <-release; return nil })
		var mu sync.Mutex
		var order []int
		var callers sync.WaitGroup
		for i := range 5 {
			callers.Go(func() {
				g.Go(func(context.Context) error {
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					return nil
				})
			})
			synctest.Wait() // caller i is queued before caller i+1 comes
		}
		close(release)
		callers.Wait()
		g.Wait()
		if fmt.Sprint(order) != "[0 1 2 3 4]" {
			t.Errorf("tasks ran in order %v, want [0 1 2 3 4]", order)
		}
	})
}

func TestLimitBoundsRunningTasks(t *testing.T) {
	for _, limit := range []int{1, 2, 5} {
		g, _ := group.New(context.Background(), group.Options{Limit: limit})
		var running, most atomic.Int32
		for range 50 {
			g.Go(func(context.Context) error {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				runtime.Gosched()
				running.Add(-1)
				return nil
			})
		}
		g.Wait()
		if most.Load() > int32(limit) {
			t.Errorf("Limit %d: %d tasks ran at once", limit, most.Load())
		}
	}
}

// TestGoReturnsCtxErrorWhileWaiting: the parent ctx ends while Go waits for a
// slot; Go returns its error and f never runs.
func TestGoReturnsCtxErrorWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		g, _ := group.New(ctx, group.Options{Limit: 1})
		g.Go(func(ctx context.Context) error { <-ctx.Done(); return nil })
		ran := false
		err := g.Go(func(context.Context) error { ran = true; return nil })
		if err != context.DeadlineExceeded {
			t.Errorf("Go = %v, want context.DeadlineExceeded", err)
		}
		if g.Wait() != nil || ran {
			t.Errorf("the refused task ran (%v) or Wait failed", ran)
		}
	})
}

// TestGoDoneCtxRunsNothing: a done ctx fails Go even when a slot is free,
// with a limit or without, and TryGo too.
func TestGoDoneCtxRunsNothing(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{{"canceled", testutil.Cancelled(), context.Canceled}, {"deadline", expired, context.DeadlineExceeded}} {
		for _, limit := range []int{0, 1} {
			g, _ := group.New(c.ctx, group.Options{Limit: limit})
			ran := false
			if err := g.Go(func(context.Context) error { ran = true; return nil }); err != c.want {
				t.Errorf("%s, Limit %d: Go = %v, want %v", c.name, limit, err, c.want)
			}
			if g.TryGo(func(context.Context) error { ran = true; return nil }) {
				t.Errorf("%s, Limit %d: TryGo = true, want false", c.name, limit)
			}
			if err := g.Wait(); err != nil || ran {
				t.Errorf("%s, Limit %d: Wait = %v, ran = %v; want nil, false", c.name, limit, err, ran)
			}
		}
	}
}

// TestFailingTaskCancelsBeforeSlotFreed pins the settled order: the slot a
// failing task frees goes to no task, since the ctx ended first.
func TestFailingTaskCancelsBeforeSlotFreed(t *testing.T) {
	for range testutil.HammerRounds(200) {
		g, _ := group.New(context.Background(), group.Options{Limit: 1})
		boom := errors.New("boom")
		g.Go(func(context.Context) error { runtime.Gosched(); return boom })
		ran := false
		if err := g.Go(func(context.Context) error { ran = true; return nil }); err != context.Canceled {
			t.Fatalf("Go after a failure = %v, want context.Canceled", err)
		}
		if g.TryGo(func(context.Context) error { ran = true; return nil }) {
			t.Fatal("TryGo after a failure = true, want false")
		}
		if err := g.Wait(); err != boom || ran {
			t.Fatalf("Wait = %v, ran = %v; want %v, false", err, ran, boom)
		}
	}
}

func TestTryGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := group.New(context.Background(), group.Options{Limit: 1})
		release := make(chan struct{})
		if !g.TryGo(func(context.Context) error { <-release; return nil }) {
			t.Fatal("TryGo with a free slot = false")
		}
		if g.TryGo(func(context.Context) error { return nil }) {
			t.Error("TryGo with every slot taken = true")
		}
		// A caller queued for the slot is not overtaken by TryGo.
		queued := make(chan struct{})
		go func() {
			g.Go(func(context.Context) error { return nil })
			close(queued)
		}()
		synctest.Wait()
		close(release)
		// The slot went to the queued Go, which returned.
		<-queued
		g.Wait()
	})
	g, _ := group.New(context.Background(), group.Options{})
	if !g.TryGo(func(context.Context) error { return nil }) {
		t.Error("TryGo without a limit = false")
	}
	g.Wait()
}

func TestTryGoDoesNotOvertakeQueuedGo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := group.New(context.Background(), group.Options{Limit: 1})
		release := make(chan struct{})
		g.Go(func(context.Context) error { <-release; return nil })
		hold := make(chan struct{})
		go g.Go(func(context.Context) error { <-hold; return nil })
		synctest.Wait()
		close(release)
		synctest.Wait() // the slot is the queued Go's now
		if g.TryGo(func(context.Context) error { return nil }) {
			t.Error("TryGo took the slot handed to a queued Go")
		}
		close(hold)
		g.Wait()
	})
}

func TestGoFromTaskIsWaitedFor(t *testing.T) {
	g, _ := group.New(context.Background(), group.Options{Limit: 2})
	var inner atomic.Bool
	g.Go(func(context.Context) error {
		return g.Go(func(context.Context) error {
			runtime.Gosched()
			inner.Store(true)
			return nil
		})
	})
	g.Wait()
	if !inner.Load() {
		t.Error("Wait returned before a task started by a task")
	}
}

// TestQueuedGoRefusedAfterFailure: a Go queued for the only slot when its
// holder fails is refused, never handed the slot the failure freed; so is a
// second one queued behind it, and a TryGo.
func TestQueuedGoRefusedAfterFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		testutil.OneProcessor(t)
		for _, collect := range []bool{false, true} {
			g, _ := group.New(context.Background(), group.Options{Limit: 1, CollectAll: collect})
			boom := errors.New("boom")
			release := make(chan struct{})
			g.Go(func(context.Context) error {
				<-release
				if collect {
					panic(boom) // what cancels a CollectAll group
				}
				return boom
			})
			var ran atomic.Int32
			errs := make(chan error, 2)
			for range 2 {
				go func() { errs <- g.Go(func(context.Context) error { ran.Add(1); return nil }) }()
				synctest.Wait()
			}
			close(release)
			for range 2 {
				if err := <-errs; err != context.Canceled {
					t.Errorf("CollectAll %v: queued Go = %v, want context.Canceled", collect, err)
				}
			}
			if g.TryGo(func(context.Context) error { ran.Add(1); return nil }) {
				t.Errorf("CollectAll %v: TryGo after the failure = true", collect)
			}
			func() {
				defer func() { recover() }()
				g.Wait()
			}()
			if ran.Load() != 0 {
				t.Errorf("CollectAll %v: %d tasks ran after the failure", collect, ran.Load())
			}
		}
	})
}
