package pool

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
)

// runHookedCase is runAcquireCase for a pool with Hooks.OnAcquire and a
// HealthCheck that reads its ctx, and MaxSize 2, so that the waiting
// Acquire's is the call that makes the second resource: the paths of the
// hooks, of the check and of New, which ctx's values reach.
func runHookedCase(t *testing.T, panicAt int32, report bool) int32 {
	var calls int32
	synctest.Test(t, func(t *testing.T) {
		bg := context.Background()
		gate := make(chan struct{})
		made := 0
		p, err := New(Config[int]{
			New: func(ctx context.Context) (int, error) {
				_ = ctx.Value("k") // the caller's values reach New
				if made++; made == 2 {
					<-gate // the second resource takes a while
				}
				return made, nil
			},
			HealthCheck: func(ctx context.Context, v int) error { return ctx.Err() },
			MaxSize:     2,
			Hooks:       Hooks{OnAcquire: func(AcquireEvent) {}},
		})
		if err != nil {
			t.Fatal(err)
		}
		held, err := p.Acquire(bg)
		if err != nil {
			t.Fatal(err)
		}
		inner, cancel := context.WithCancel(bg)
		ctx := &probeCtx{Context: inner, lock: &p.q.Mutex, panicAt: panicAt}
		returned := make(chan any, 1)
		go func() {
			defer func() { returned <- recover() }()
			if r, err := p.Acquire(ctx); err == nil {
				r.Release()
			}
		}()
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case v := <-returned:
			// New's panic (its ctx.Value panicked) reaches the waiting
			// Acquire wrapped, as documented.
			if v != nil && v != errUserCtxPanic && !strings.Contains(fmt.Sprint(v), errUserCtxPanic.Error()) {
				t.Errorf("Acquire panicked with %v", v)
			}
		default:
			t.Fatal("Acquire did not return once its ctx ended")
		}
		if report {
			for _, h := range ctx.held {
				t.Error(h)
			}
		}
		close(gate)
		synctest.Wait()
		held.Release()
		var rs []*Resource[int]
		for range 2 {
			r, err := p.Acquire(bg)
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		for _, r := range rs {
			r.Release()
		}
		if err := p.Close(bg); err != nil {
			t.Fatal(err)
		}
		calls = ctx.calls.Load()
	})
	return calls
}

// Acquire with hooks and a check, the caller's ctx probed at each call
// (the paths ctxcode_internal_test.go does not take), then made to panic at
// each call in turn.
func TestReviewS3_HookedAcquireCallerCtx(t *testing.T) {
	if runHookedCase(t, 0, true) == 0 {
		t.Fatal("Acquire never looked at its ctx: the probe tested nothing")
	}
	n := runHookedCase(t, 0, false)
	for at := int32(1); at <= n; at++ {
		t.Run(fmt.Sprintf("panic at call %d of %d", at, n), func(t *testing.T) {
			runHookedCase(t, at, false)
		})
	}
}
