package group_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/ctxsync/ctxsync/group"
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

func TestPanicErrorNilAndZero(t *testing.T) {
	var p *group.PanicError
	if p.Error() == "" || p.Unwrap() != nil {
		t.Errorf("nil *PanicError: Error() = %q, Unwrap() = %v", p.Error(), p.Unwrap())
	}
	var z group.PanicError
	if !strings.HasPrefix(z.Error(), "ctxsync: ") || z.Unwrap() != nil {
		t.Errorf("zero PanicError: Error() = %q, Unwrap() = %v", z.Error(), z.Unwrap())
	}
}
