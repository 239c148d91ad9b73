package group_test

// The test suite of golang.org/x/sync/errgroup (errgroup/errgroup_test.go),
// re-expressed against Group. Each peer case is a TestPortErrgroup<Case>.
//
// Where the contracts differ by design:
//   - The zero Group is not usable (TestZeroGroup): its methods panic, naming
//     New. Every case makes its group with New.
//   - Go after Wait has returned panics: a Group runs once. The peer's
//     TestZeroGroup and TestTryGo reuse one group across Waits; here each
//     round has a group of its own.
//   - The first error cancels the group (fail-fast is the default, with or
//     without a ctx), and Go then refuses: it returns the ctx's error and f
//     never runs. The peer's zero group runs the tasks given after a failure.
//   - The limit is Options.Limit, fixed by New: there is no SetLimit. A limit
//     of 0 means none; the peer's SetLimit(0), which blocks every Go, has no
//     counterpart: the nearest is a group whose ctx has ended, which refuses
//     every TryGo.
//   - Tasks take the group's ctx as an argument.
//   - Panics and runtime.Goexit (the peer's later versions re-raise them in
//     Wait): a panic cancels the group and Wait panics with a *PanicError; a
//     Goexit fails the task with ErrGoexit. TestPortErrgroupPanic and
//     TestPortErrgroupGoexit check our documented behaviour.
//   - Skipped: ExampleGroup_justErrors (it fetches URLs over the network)
//     and BenchmarkGo (bench/ compares us). ExampleGroup_parallel is
//     TestPortErrgroupParallel.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/group"
)

// TestPortErrgroupZeroGroup: Wait returns the first error, by identity, and
// after it Go refuses with the cancelled ctx's error, running nothing.
func TestPortErrgroupZeroGroup(t *testing.T) {
	err1 := errors.New("port_errgroup_test: 1")
	err2 := errors.New("port_errgroup_test: 2")
	for _, errs := range [][]error{{}, {nil}, {err1}, {err1, nil}, {err1, nil, err2}} {
		t.Run(fmt.Sprint(errs), func(t *testing.T) {
			g, gctx := group.New(t.Context(), group.Options{})
			var first error
			for i, err := range errs {
				ran := make(chan struct{})
				goErr := g.Go(func(context.Context) error {
					close(ran)
					return err
				})
				if first != nil {
					require.Equal(t, context.Canceled, goErr, "Go %d after the first error", i)
					continue
				}
				require.NoError(t, goErr)
				<-ran
				if err != nil {
					first = err
					// Its failure cancels the group: wait for that, so
					// that the next Go sees it.
					<-gctx.Done()
				}
			}
			require.True(t, g.Wait() == first, "Wait = %v, want %v", g.Wait(), first)
			require.True(t, g.Wait() == first, "a second Wait differs")
			require.PanicsWithValue(t, "group: Go after Wait returned",
				func() { _ = g.Go(func(context.Context) error { return nil }) })
		})
	}
	var zero group.Group
	require.PanicsWithValue(t, "group: Go on a Group not made by New: use New",
		func() { _ = zero.Go(func(context.Context) error { return nil }) })
	require.PanicsWithValue(t, "group: Wait on a Group not made by New: use New",
		func() { _ = zero.Wait() })
}

func TestPortErrgroupWithContext(t *testing.T) {
	errDoom := errors.New("port_errgroup_test: doomed")
	for _, tc := range []struct {
		errs []error
		want error
	}{
		{want: nil},
		{errs: []error{nil}, want: nil},
		{errs: []error{errDoom}, want: errDoom},
		{errs: []error{errDoom, nil}, want: errDoom},
	} {
		g, ctx := group.New(context.Background(), group.Options{})
		for _, err := range tc.errs {
			// After errDoom, Go may refuse (the group failed): then f
			// never runs, which is what the case wants anyway.
			_ = g.Go(func(context.Context) error { return err })
		}
		if err := g.Wait(); err != tc.want {
			t.Errorf("errs %v: Wait = %v, want %v", tc.errs, err, tc.want)
		}
		select {
		case <-ctx.Done():
		default:
			t.Errorf("errs %v: the group's ctx is not done after Wait", tc.errs)
		}
	}
}

// TestPortErrgroupTryGo: with a limit of 42, 42 TryGo start and the 43rd is
// refused; once they return, a new group takes one more; with a limit of 1,
// one. The peer's SetLimit(0) becomes a group whose ctx has ended.
func TestPortErrgroupTryGo(t *testing.T) {
	ch := make(chan struct{})
	fn := func(context.Context) error {
		ch <- struct{}{}
		return nil
	}
	const n = 42
	g, _ := group.New(t.Context(), group.Options{Limit: n})
	for i := range n {
		require.True(t, g.TryGo(fn), "TryGo %d refused below the limit", i)
	}
	require.False(t, g.TryGo(fn), "TryGo at the limit ran")
	go func() {
		for range n {
			<-ch
		}
	}()
	require.NoError(t, g.Wait())

	g, _ = group.New(t.Context(), group.Options{Limit: n})
	require.True(t, g.TryGo(fn))
	go func() { <-ch }()
	require.NoError(t, g.Wait())

	g, _ = group.New(t.Context(), group.Options{Limit: 1})
	require.True(t, g.TryGo(fn))
	require.False(t, g.TryGo(fn))
	go func() { <-ch }()
	require.NoError(t, g.Wait())

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	g, _ = group.New(ctx, group.Options{Limit: 1})
	for range 1 << 10 {
		require.False(t, g.TryGo(fn), "TryGo ran a task in a group whose ctx ended")
	}
	require.Equal(t, context.Canceled, g.Go(fn))
	require.NoError(t, g.Wait())
}

// TestPortErrgroupGoLimit: never more than Limit tasks at once. The peer's
// 1µs sleep is virtual here, and the count modest (the machine is shared).
func TestPortErrgroupGoLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 10
		g, _ := group.New(t.Context(), group.Options{Limit: limit})
		var active atomic.Int32
		for range 1 << 8 {
			require.NoError(t, g.Go(func(context.Context) error {
				n := active.Add(1)
				defer active.Add(-1)
				if n > limit {
					return fmt.Errorf("%d tasks at once, want at most %d", n, limit)
				}
				time.Sleep(time.Microsecond)
				return nil
			}))
		}
		require.NoError(t, g.Wait())
	})
}

// TestPortErrgroupCancelCause: the cause of the group's ctx is the first
// error, or context.Canceled when Wait cancelled it.
func TestPortErrgroupCancelCause(t *testing.T) {
	errDoom := errors.New("port_errgroup_test: doomed")
	for _, tc := range []struct {
		errs []error
		want error
	}{
		{want: nil},
		{errs: []error{nil}, want: nil},
		{errs: []error{errDoom}, want: errDoom},
		{errs: []error{errDoom, nil}, want: errDoom},
	} {
		g, ctx := group.New(context.Background(), group.Options{})
		for _, err := range tc.errs {
			g.TryGo(func(context.Context) error { return err })
		}
		if err := g.Wait(); err != tc.want {
			t.Errorf("errs %v: Wait = %v, want %v", tc.errs, err, tc.want)
		}
		want := tc.want
		if want == nil {
			want = context.Canceled
		}
		if cause := context.Cause(ctx); cause != want {
			t.Errorf("errs %v: context.Cause = %v, want %v", tc.errs, cause, want)
		}
	}
}

// TestPortErrgroupParallel is the peer's parallel-search example: results in
// order, each task writing its own index.
func TestPortErrgroupParallel(t *testing.T) {
	search := func(kind string) func(context.Context, string) (string, error) {
		return func(_ context.Context, q string) (string, error) {
			return fmt.Sprintf("%s result for %q", kind, q), nil
		}
	}
	searches := []func(context.Context, string) (string, error){search("web"), search("image"), search("video")}
	g, _ := group.New(t.Context(), group.Options{})
	results := make([]string, len(searches))
	for i, s := range searches {
		require.NoError(t, g.Go(func(ctx context.Context) error {
			r, err := s(ctx, "golang")
			results[i] = r
			return err
		}))
	}
	require.NoError(t, g.Wait())
	require.Equal(t, []string{`web result for "golang"`, `image result for "golang"`, `video result for "golang"`}, results)
}

// TestPortErrgroupPanic: a task's panic cancels the group, with the
// *PanicError as the cause, and Wait re-raises it once every task has
// returned; a second Wait panics the same.
func TestPortErrgroupPanic(t *testing.T) {
	g, ctx := group.New(t.Context(), group.Options{})
	other := make(chan struct{})
	require.NoError(t, g.Go(func(ctx context.Context) error {
		<-ctx.Done()
		close(other)
		return ctx.Err()
	}))
	require.NoError(t, g.Go(func(context.Context) error { panic("boom") }))
	v := func() (v any) {
		defer func() { v = recover() }()
		_ = g.Wait()
		return nil
	}()
	pe, ok := v.(*group.PanicError)
	require.True(t, ok, "Wait panicked with %T %v, want *PanicError", v, v)
	require.Equal(t, "boom", pe.Value)
	select {
	case <-other:
	default:
		t.Fatal("Wait returned before every task")
	}
	require.Equal(t, error(pe), context.Cause(ctx))
	require.PanicsWithValue(t, pe, func() { _ = g.Wait() })
}

// TestPortErrgroupGoexit: a task that calls runtime.Goexit fails with
// ErrGoexit, cancelling the group.
func TestPortErrgroupGoexit(t *testing.T) {
	g, ctx := group.New(t.Context(), group.Options{})
	require.NoError(t, g.Go(func(context.Context) error {
		runtime.Goexit()
		return nil
	}))
	require.Equal(t, group.ErrGoexit, g.Wait())
	require.Equal(t, group.ErrGoexit, context.Cause(ctx))
}
