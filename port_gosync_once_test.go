package ctxsync_test

// The tests of this file are Go's tests of sync.Once (src/sync/
// once_test.go) and of sync.OnceFunc, OnceValue and OnceValues (src/sync/
// oncefunc_test.go), re-expressed against Lazy, one Go test per peer test,
// named after it. Once.Do(f) and the OnceX functions are a Lazy's Get; a
// Lazy's init returns a value and an error, so OnceFunc is a
// Lazy[struct{}], OnceValue a Lazy[int] and OnceValues a Lazy of a pair.
//
// Where our contract differs by design (Lazy's doc):
//
//   - OncePanic, OnceFuncPanic, OnceValuePanic, OnceValuesPanic: Once and
//     the OnceX functions keep a panic for good (Once.Do returns quietly
//     after it, OnceX panics again with the same value, f runs once). A
//     Lazy keeps nothing but a success: each Get that meets a panic of
//     init panics with a *PanicError carrying the value, and the next Get
//     runs init again. So the ports count two runs where the peer counts
//     one.
//   - OnceValues with an error: the peer's (T, error) pair is kept as
//     returned; a Lazy's error is returned to the Gets of that run and not
//     kept, and the next Get runs init again (TestPortGoLazyOnceValuesError).
//   - OnceFuncPanicNil: the *runtime.PanicNilError reaches the caller as the
//     Value of a *PanicError.
//   - OnceFuncGoexit: the peer's results are unspecified but f runs once;
//     init runs in a goroutine of its own, so a Goexit in it ends that
//     goroutine only, each Get of that run returns ErrGoexit, and the next
//     Get runs init again.
//   - OnceFuncPanicTraceback: the panic is raised again in the caller, so
//     the stack of init is in the *PanicError's Stack, not in the caller's.
//   - OnceXGC, the panic variants: after a panic a Lazy keeps init, to run
//     it again; only the success variants apply.
//   - Once's parallel run: every Get has a ctx; the port uses one that
//     never ends.
//
// Skipped, with no counterpart: the Benchmark* functions (see bench/).

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

func TestPortGoLazyOnce(t *testing.T) {
	var calls atomic.Int32
	l := ctxsync.NewLazy(func(context.Context) (int32, error) { return calls.Add(1), nil })
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			v, err := l.Get(context.Background())
			if err != nil || v != 1 {
				t.Errorf("Get = %d, %v; want 1, nil", v, err)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(1), calls.Load())
}

// getPanic returns what l.Get panics with, or nil.
func getPanic[T any](l *ctxsync.Lazy[T]) (p any) {
	defer func() { p = recover() }()
	_, _ = l.Get(context.Background())
	return nil
}

func TestPortGoLazyOncePanic(t *testing.T) {
	calls := 0
	l := ctxsync.NewLazy(func(context.Context) (struct{}, error) {
		calls++
		if calls == 1 {
			panic("failed")
		}
		return struct{}{}, nil
	})
	var pe *ctxsync.PanicError
	require.ErrorAs(t, getPanic(l).(error), &pe, "the first Get")
	require.Equal(t, "failed", pe.Value)
	require.Nil(t, getPanic(l), "the second Get, which runs init again")
	require.Nil(t, getPanic(l), "the third Get")
	require.Equal(t, 2, calls)
}

// requireNoAllocs checks that a Get of a made value allocates nothing.
func requireNoAllocs(t *testing.T, get func()) {
	t.Helper()
	if allocs := testing.AllocsPerRun(10, get); allocs != 0 {
		t.Errorf("%v allocations per Get of a made value, want 0", allocs)
	}
}

func TestPortGoLazyOnceFunc(t *testing.T) {
	calls := 0
	l := ctxsync.NewLazy(func(context.Context) (struct{}, error) { calls++; return struct{}{}, nil })
	ctx := context.Background()
	requireNoAllocs(t, func() { _, _ = l.Get(ctx) })
	require.Equal(t, 1, calls)
}

func TestPortGoLazyOnceValue(t *testing.T) {
	calls := 0
	l := ctxsync.NewLazy(func(context.Context) (int, error) { calls++; return calls, nil })
	ctx := context.Background()
	requireNoAllocs(t, func() { _, _ = l.Get(ctx) })
	v, err := l.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.Equal(t, 1, calls)
}

type gosyncPair struct{ a, b int }

func TestPortGoLazyOnceValues(t *testing.T) {
	calls := 0
	l := ctxsync.NewLazy(func(context.Context) (gosyncPair, error) {
		calls++
		return gosyncPair{calls, calls + 1}, nil
	})
	ctx := context.Background()
	requireNoAllocs(t, func() { _, _ = l.Get(ctx) })
	v, err := l.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, gosyncPair{1, 2}, v)
	require.Equal(t, 1, calls)
}

func TestPortGoLazyOnceValuesError(t *testing.T) {
	calls := 0
	errFirst := errors.New("first run fails")
	l := ctxsync.NewLazy(func(context.Context) (int, error) {
		calls++
		if calls == 1 {
			return 0, errFirst
		}
		return calls, nil
	})
	_, err := l.Get(context.Background())
	require.Equal(t, errFirst, err)
	_, ok := l.Peek()
	require.False(t, ok, "an error is not kept as the value")
	v, err := l.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, v)
	v, err = l.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, 2, v)
	require.Equal(t, 2, calls)
}

// requirePanicEachGet checks that two Gets of a Lazy whose init always
// panics each panic with a *PanicError that check accepts, init running for
// each.
func requirePanicEachGet[T any](t *testing.T, calls *int, l *ctxsync.Lazy[T], check func(v any) bool) {
	t.Helper()
	for _, label := range []string{"first Get", "second Get"} {
		p := getPanic(l)
		pe, ok := p.(*ctxsync.PanicError)
		require.True(t, ok, "%s panicked with %T %v, want a *ctxsync.PanicError", label, p, p)
		require.True(t, check(pe.Value), "%s: the panic's value is %v", label, pe.Value)
	}
	require.Equal(t, 2, *calls, "runs of init: a panic is not kept")
}

func TestPortGoLazyOncePanicX(t *testing.T) {
	isX := func(v any) bool { return v == "x" }
	t.Run("OnceFunc", func(t *testing.T) {
		calls := 0
		l := ctxsync.NewLazy(func(context.Context) (struct{}, error) { calls++; panic("x") })
		requirePanicEachGet(t, &calls, l, isX)
	})
	t.Run("OnceValue", func(t *testing.T) {
		calls := 0
		l := ctxsync.NewLazy(func(context.Context) (int, error) { calls++; panic("x") })
		requirePanicEachGet(t, &calls, l, isX)
	})
	t.Run("OnceValues", func(t *testing.T) {
		calls := 0
		l := ctxsync.NewLazy(func(context.Context) (gosyncPair, error) { calls++; panic("x") })
		requirePanicEachGet(t, &calls, l, isX)
	})
}

func TestPortGoLazyOnceFuncPanicNil(t *testing.T) {
	calls := 0
	l := ctxsync.NewLazy(func(context.Context) (struct{}, error) {
		calls++
		panic(nil)
	})
	requirePanicEachGet(t, &calls, l, func(v any) bool {
		_, ok := v.(*runtime.PanicNilError)
		return ok
	})
}

func TestPortGoLazyOnceFuncGoexit(t *testing.T) {
	calls := 0
	l := ctxsync.NewLazy(func(context.Context) (struct{}, error) {
		calls++
		runtime.Goexit()
		return struct{}{}, nil
	})
	for range 2 {
		_, err := l.Get(context.Background())
		require.Equal(t, ctxsync.ErrGoexit, err)
	}
	require.Equal(t, 2, calls, "runs of init: a Goexit is not kept")
}

// gosyncInitPanics is an init that panics, to be found in the stack.
func gosyncInitPanics(context.Context) (struct{}, error) { panic("x") }

func TestPortGoLazyOnceFuncPanicTraceback(t *testing.T) {
	l := ctxsync.NewLazy(gosyncInitPanics)
	pe, ok := getPanic(l).(*ctxsync.PanicError)
	require.True(t, ok)
	require.Equal(t, "x", pe.Value)
	require.True(t, strings.Contains(string(pe.Stack), "ctxsync_test.gosyncInitPanics"),
		"the stack of the panic names the init that panicked:\n%s", pe.Stack)
}

// collected runs the collector until done is set, or gives up after a while.
func collected(done *atomic.Bool) bool {
	for range 200 {
		if done.Load() {
			return true
		}
		runtime.GC()
		runtime.Gosched()
	}
	return done.Load()
}

// TestPortGoLazyOnceXGC pins a defect found by the port of the peer's
// OnceXGC.
//
// What is wrong: a Lazy keeps its init, and so everything init's closure
// holds (a buffer, a config, a client), reachable for as long as the Lazy
// lives, though once the value is made init never runs again. A Lazy in a
// package variable pins it for the life of the program. No doc covers it;
// sync.OnceFunc, OnceValue and OnceValues drop their f after the first call
// for this reason.
//
// What is right: once a run of init succeeds and its value is kept, the
// Lazy lets go of init, so that what it holds can be collected. (After a
// failure it keeps init, to run it again: that is by design.)
func TestPortGoLazyOnceXGC(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(buf []byte) func()
	}{
		{"OnceFunc", func(buf []byte) func() {
			l := ctxsync.NewLazy(func(context.Context) (struct{}, error) { buf[0] = 1; return struct{}{}, nil })
			return func() { _, _ = l.Get(context.Background()) }
		}},
		{"OnceValue", func(buf []byte) func() {
			l := ctxsync.NewLazy(func(context.Context) (any, error) { buf[0] = 1; return nil, nil })
			return func() { _, _ = l.Get(context.Background()) }
		}},
		{"OnceValues", func(buf []byte) func() {
			l := ctxsync.NewLazy(func(context.Context) (gosyncPair, error) { buf[0] = 1; return gosyncPair{}, nil })
			return func() { _, _ = l.Get(context.Background()) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, 1024)
			var gone atomic.Bool
			runtime.AddCleanup(&buf[0], func(g *atomic.Bool) { g.Store(true) }, &gone)
			get := tc.make(buf)
			runtime.GC()
			require.False(t, gone.Load(), "init collected before the value was made")
			get()
			require.True(t, collected(&gone), "init, kept by the Lazy after the value was made, is never collected")
			get()
		})
	}
}
