package group_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// mustPanic runs f and returns what it panicked with, failing the test if it
// did not panic.
func mustPanic(t *testing.T, name string, f func()) (v any) {
	t.Helper()
	defer func() {
		if v = recover(); v == nil {
			t.Errorf("%s did not panic", name)
		}
	}()
	f()
	return nil
}

// wantPanicPrefix checks that f panics with a message starting with "group:".
func wantPanicPrefix(t *testing.T, name string, f func()) {
	t.Helper()
	v := mustPanic(t, name, f)
	if s, ok := v.(string); v != nil && (!ok || !strings.HasPrefix(s, "group: ")) {
		t.Errorf("%s panicked with %v, want a message starting with \"group: \"", name, v)
	}
}

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

func TestPanicRaisedByWait(t *testing.T) {
	g, ctx := group.New(context.Background(), group.Options{CollectAll: true})
	g.Go(func(ctx context.Context) error { <-ctx.Done(); return nil }) // only the panic ends it
	g.Go(func(context.Context) error { panicInTask("kaboom"); return nil })
	v := mustPanic(t, "Wait", func() { g.Wait() })
	p, ok := v.(*group.PanicError)
	if !ok {
		t.Fatalf("Wait panicked with %T %v, want *group.PanicError", v, v)
	}
	if p.Value != "kaboom" {
		t.Errorf("PanicError.Value = %v, want kaboom", p.Value)
	}
	if !strings.Contains(string(p.Stack), "panicInTask") {
		t.Errorf("PanicError.Stack does not show the task's frame:\n%s", p.Stack)
	}
	if !strings.Contains(p.Error(), "kaboom") {
		t.Errorf("PanicError.Error() = %q, want the value in it", p.Error())
	}
	if context.Cause(ctx) != error(p) {
		t.Errorf("Cause = %v, want the PanicError", context.Cause(ctx))
	}
	// Wait again: the same panic.
	if v2 := mustPanic(t, "second Wait", func() { g.Wait() }); v2 != v {
		t.Errorf("second Wait panicked with %v, want the same PanicError", v2)
	}
}

func panicInTask(v any) { panic(v) }

func TestPanicErrorUnwrap(t *testing.T) {
	sentinel := errors.New("sentinel")
	g, _ := group.New(context.Background(), group.Options{})
	g.Go(func(context.Context) error { panic(fmt.Errorf("wrapped: %w", sentinel)) })
	v := mustPanic(t, "Wait", func() { g.Wait() })
	if err, _ := v.(error); !errors.Is(err, sentinel) {
		t.Errorf("errors.Is(PanicError, sentinel) = false for %v", v)
	}
	if (&group.PanicError{Value: 3}).Unwrap() != nil {
		t.Error("Unwrap of a non-error value is not nil")
	}
}

func TestPanicNilIsRecovered(t *testing.T) {
	g, _ := group.New(context.Background(), group.Options{})
	g.Go(func(context.Context) error { panic(nil) })
	v := mustPanic(t, "Wait", func() { g.Wait() })
	p, ok := v.(*group.PanicError)
	if !ok {
		t.Fatalf("Wait panicked with %T, want *group.PanicError", v)
	}
	if _, ok := p.Value.(*runtime.PanicNilError); !ok {
		t.Errorf("PanicError.Value = %T, want *runtime.PanicNilError", p.Value)
	}
}

func TestGoexitCountsAsFailure(t *testing.T) {
	for _, collect := range []bool{false, true} {
		g, ctx := group.New(context.Background(), group.Options{CollectAll: collect, Limit: 1})
		g.Go(func(context.Context) error { runtime.Goexit(); return nil })
		err := g.Wait()
		if !errors.Is(err, group.ErrGoexit) {
			t.Errorf("CollectAll %v: Wait = %v, want ErrGoexit", collect, err)
		}
		if ctx.Err() == nil {
			t.Error("ctx live after Wait")
		}
	}
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

func TestGoAfterWaitPanics(t *testing.T) {
	g, _ := group.New(context.Background(), group.Options{})
	g.Wait()
	wantPanicPrefix(t, "Go after Wait", func() { g.Go(func(context.Context) error { return nil }) })
	wantPanicPrefix(t, "TryGo after Wait", func() { g.TryGo(func(context.Context) error { return nil }) })
}

func TestMisusePanics(t *testing.T) {
	bg := context.Background()
	nop := func(context.Context) error { return nil }
	var nilCtx context.Context
	g, _ := group.New(bg, group.Options{})
	defer g.Wait()
	var zero group.Group
	for name, f := range map[string]func(){
		"New(nil ctx)":        func() { group.New(nilCtx, group.Options{}) },
		"New(Limit -1)":       func() { group.New(bg, group.Options{Limit: -1}) },
		"Go(nil)":             func() { g.Go(nil) },
		"TryGo(nil)":          func() { g.TryGo(nil) },
		"zero Group Go":       func() { zero.Go(nop) },
		"zero Group TryGo":    func() { zero.TryGo(nop) },
		"zero Group Wait":     func() { zero.Wait() },
		"Map(nil ctx)":        func() { group.Map(nilCtx, []int{1}, 0, double) },
		"Map(nil f)":          func() { group.Map[int, int](bg, []int{1}, 0, nil) },
		"Map(limit -1)":       func() { group.Map(bg, []int{1}, -1, double) },
		"MapAll(nil ctx)":     func() { group.MapAll(nilCtx, []int{1}, 0, double) },
		"MapAll(nil f)":       func() { group.MapAll[int, int](bg, nil, 0, nil) },
		"MapAll(limit -1)":    func() { group.MapAll(bg, nil, -1, double) },
		"ForEach(nil ctx)":    func() { group.ForEach(nilCtx, count(1), 0, nopItem) },
		"ForEach(nil f)":      func() { group.ForEach[int](bg, count(1), 0, nil) },
		"ForEach(limit -1)":   func() { group.ForEach(bg, count(1), -1, nopItem) },
		"ForEach(nil seq)":    func() { group.ForEach(bg, nil, 0, nopItem) },
		"Map(nil f, no item)": func() { group.Map[int, int](bg, nil, 0, nil) },
	} {
		wantPanicPrefix(t, name, f)
	}
}

func TestHugeLimit(t *testing.T) {
	g, _ := group.New(context.Background(), group.Options{Limit: int(^uint(0) >> 1)})
	for range 10 {
		g.Go(func(context.Context) error { return nil })
	}
	if err := g.Wait(); err != nil {
		t.Errorf("Wait = %v", err)
	}
}

// TestInBubble: a Group made in a synctest bubble works on virtual time, and
// Wait blocks durably there.
func TestInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		g, _ := group.New(context.Background(), group.Options{Limit: 2})
		for i := range 4 {
			g.Go(func(ctx context.Context) error {
				time.Sleep(time.Duration(i+1) * time.Second)
				return nil
			})
		}
		g.Wait()
		// Slots: 1s and 2s first, then 3s from 1s and 4s from 2s.
		if got := time.Since(start); got != 6*time.Second {
			t.Errorf("the group took %v of virtual time, want 6s", got)
		}
	})
}

// TestMadeOutsideBubbleUsedInside: a Group made outside a bubble, and its
// ctx, serve in one.
func TestMadeOutsideBubbleUsedInside(t *testing.T) {
	g, _ := group.New(context.Background(), group.Options{Limit: 1})
	synctest.Test(t, func(t *testing.T) {
		for range 3 {
			g.Go(func(ctx context.Context) error { return nil })
		}
		if err := g.Wait(); err != nil {
			t.Errorf("Wait = %v", err)
		}
	})
}

// TestBubbleHandOver: a Group used in a bubble and then outside it, made on
// either side, keeps working (with a sync.WaitGroup inside, the Add outside
// after the bubble was a fatal error).
func TestBubbleHandOver(t *testing.T) {
	nop := func(context.Context) error { return nil }
	g, _ := group.New(context.Background(), group.Options{Limit: 1})
	synctest.Test(t, func(t *testing.T) {
		g.Go(nop)
		g.TryGo(nop)
		synctest.Wait()
	})
	g.Go(nop)
	if err := g.Wait(); err != nil {
		t.Errorf("made outside: Wait = %v", err)
	}

	synctest.Test(t, func(t *testing.T) {
		g, _ = group.New(context.Background(), group.Options{Limit: 1})
		g.Go(func(context.Context) error { time.Sleep(time.Second); return nil })
		synctest.Wait()
		time.Sleep(2 * time.Second)
	})
	g.Go(nop)
	if err := g.Wait(); err != nil {
		t.Errorf("made inside: Wait = %v", err)
	}
}

func TestPanicErrorNilAndZero(t *testing.T) {
	var p *group.PanicError
	if p.Error() == "" || p.Unwrap() != nil {
		t.Errorf("nil *PanicError: Error() = %q, Unwrap() = %v", p.Error(), p.Unwrap())
	}
	var z group.PanicError
	if !strings.HasPrefix(z.Error(), "group: ") || z.Unwrap() != nil {
		t.Errorf("zero PanicError: Error() = %q, Unwrap() = %v", z.Error(), z.Unwrap())
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
