package ctxsync_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

type lazyResult struct {
	v   int
	err error
}

func goGet(ctx context.Context, l *ctxsync.Lazy[int]) <-chan lazyResult {
	res := make(chan lazyResult, 1)
	go func() {
		v, err := l.Get(ctx)
		res <- lazyResult{v, err}
	}()
	return res
}

// TestLazyMadeOnce: concurrent Gets share one run of init; the value is kept,
// and later Gets and Peek return it without running init.
func TestLazyMadeOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFlightGate(5)
		l := ctxsync.NewLazy(g.fn)
		_, ok := l.Peek()
		require.False(t, ok, "nothing made before the first Get")
		var rs []<-chan lazyResult
		for range 4 {
			rs = append(rs, goGet(t.Context(), l))
			synctest.Wait()
		}
		_, ok = l.Peek()
		require.False(t, ok, "Peek never waits for the run in flight")
		close(g.release)
		for _, r := range rs {
			require.Equal(t, lazyResult{5, nil}, <-r)
		}
		for range 3 {
			v, err := l.Get(t.Context())
			require.Equal(t, lazyResult{5, nil}, lazyResult{v, err})
		}
		v, ok := l.Peek()
		require.True(t, ok)
		require.Equal(t, 5, v)
		require.EqualValues(t, 1, g.runs.Load())
	})
}

// TestLazyErrorNotKept: the Gets waiting for a run that fails get its error;
// the next Get runs init again (sync.OnceValues keeps the error for good).
func TestLazyErrorNotKept(t *testing.T) {
	var runs int
	boom := errors.New("backend down")
	l := ctxsync.NewLazy(func(context.Context) (int, error) {
		runs++
		if runs < 3 {
			return -1, boom
		}
		return runs, nil
	})
	for range 2 {
		v, err := l.Get(context.Background())
		require.Equal(t, lazyResult{-1, boom}, lazyResult{v, err}, "the value comes with the error, as init returned it")
		_, ok := l.Peek()
		require.False(t, ok)
	}
	v, err := l.Get(context.Background())
	require.Equal(t, lazyResult{3, nil}, lazyResult{v, err})
	v, err = l.Get(context.Background())
	require.Equal(t, lazyResult{3, nil}, lazyResult{v, err})
	require.Equal(t, 3, runs)
}

// TestLazyPanicNotKept: a panic in init reaches every waiting Get as a
// *PanicError; the next Get runs init again.
func TestLazyPanicNotKept(t *testing.T) {
	var runs atomic.Int32
	l := ctxsync.NewLazy(func(context.Context) (int, error) {
		if runs.Add(1) == 1 {
			panic("first run fails")
		}
		return 2, nil
	})
	func() {
		defer func() {
			p, ok := recover().(*ctxsync.PanicError)
			require.True(t, ok)
			require.Equal(t, "first run fails", p.Value)
			require.Contains(t, string(p.Stack), "TestLazyPanicNotKept")
		}()
		_, _ = l.Get(context.Background())
		t.Fatal("Get returned")
	}()
	v, err := l.Get(context.Background())
	require.Equal(t, lazyResult{2, nil}, lazyResult{v, err})
}

// TestLazyGoexitNotKept: runtime.Goexit in init gives the waiting Gets
// ErrGoexit, and is not kept.
func TestLazyGoexitNotKept(t *testing.T) {
	var runs atomic.Int32
	l := ctxsync.NewLazy(func(context.Context) (int, error) {
		if runs.Add(1) == 1 {
			runtime.Goexit()
		}
		return 2, nil
	})
	_, err := l.Get(context.Background())
	require.Equal(t, ctxsync.ErrGoexit, err)
	v, err := l.Get(context.Background())
	require.Equal(t, lazyResult{2, nil}, lazyResult{v, err})
}

// TestLazyGetsLeave: each Get can leave; init's ctx is cancelled when the
// last one has left, and the next Get runs init again under a live ctx.
func TestLazyGetsLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFlightGate(1)
		l := ctxsync.NewLazy(g.fn)
		ctxA, cancelA := context.WithCancel(t.Context())
		a := goGet(ctxA, l)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := l.Get(ctx)
		require.Equal(t, context.DeadlineExceeded, err)
		require.NoError(t, g.lastCtx().Err(), "A still waits")
		cancelA()
		require.Equal(t, lazyResult{0, context.Canceled}, <-a)
		require.ErrorIs(t, g.lastCtx().Err(), context.Canceled, "every Get left")
		synctest.Wait()
		_, ok := l.Peek()
		require.False(t, ok, "the cancelled run made nothing")

		close(g.release)
		v, err := l.Get(t.Context())
		require.Equal(t, lazyResult{1, nil}, lazyResult{v, err})
		require.EqualValues(t, 2, g.runs.Load())
	})
}

// TestLazyLeftRunSucceeds: a run that every Get left, and that goes on
// anyway, keeps its value if it succeeds; a run started meanwhile returns the
// value kept first, so that every Get sees one value.
func TestLazyLeftRunSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		releases := []chan struct{}{make(chan struct{}), make(chan struct{})}
		l := ctxsync.NewLazy(func(context.Context) (int, error) {
			n := runs.Add(1)
			<-releases[n-1] // ignores its ctx
			return int(n), nil
		})
		ctx, cancel := context.WithCancel(t.Context())
		first := goGet(ctx, l)
		synctest.Wait()
		cancel()
		require.Equal(t, context.Canceled, (<-first).err)
		second := goGet(t.Context(), l) // the first run was left: a new run
		synctest.Wait()
		require.EqualValues(t, 2, runs.Load())
		close(releases[0])
		synctest.Wait()
		v, ok := l.Peek()
		require.True(t, ok, "the left run's success is kept")
		require.Equal(t, 1, v)
		close(releases[1])
		require.Equal(t, lazyResult{1, nil}, <-second, "one value for every Get")
	})
}

// TestLazyDoneCtx: a done ctx fails Get even when the value is made.
func TestLazyDoneCtx(t *testing.T) {
	for _, c := range doneCtxCases(t) {
		var runs int
		l := ctxsync.NewLazy(func(context.Context) (int, error) { runs++; return 1, nil })
		_, err := l.Get(c.ctx)
		require.Equal(t, c.want, err, c.name)
		require.Zero(t, runs, "%s: a done ctx starts nothing", c.name)
		_, err = l.Get(context.Background())
		require.NoError(t, err)
		v, err := l.Get(c.ctx)
		require.Equal(t, lazyResult{0, c.want}, lazyResult{v, err}, "%s: made, and still a done ctx fails", c.name)
	}
}

func TestLazyMisuseAndZero(t *testing.T) {
	require.PanicsWithValue(t, "ctxsync: NewLazy with nil init", func() { ctxsync.NewLazy[int](nil) })
	var zero ctxsync.Lazy[int]
	v, ok := zero.Peek()
	require.Equal(t, 0, v)
	require.False(t, ok, "Peek works on a zero Lazy")
	require.PanicsWithValue(t, "ctxsync: Lazy.Get on a zero Lazy; use NewLazy", func() { zero.Get(context.Background()) })
	require.PanicsWithValue(t, "ctxsync: Lazy.Get on a zero Lazy; use NewLazy", func() { zero.Get(testutil.Cancelled()) },
		"misuse panics whatever the ctx")
	l := ctxsync.NewLazy(func(context.Context) (int, error) { return 1, nil })
	//lint:ignore SA1012 a nil ctx is what is tested
	require.PanicsWithValue(t, "ctxsync: nil Context", func() { l.Get(nil) })
}

// TestLazyInitCallsBack: init may Peek its own Lazy and Get another without
// deadlock: no lock is held while init runs.
func TestLazyInitCallsBack(t *testing.T) {
	other := ctxsync.NewLazy(func(context.Context) (int, error) { return 10, nil })
	var l *ctxsync.Lazy[int]
	l = ctxsync.NewLazy(func(ctx context.Context) (int, error) {
		if _, ok := l.Peek(); ok {
			return 0, errors.New("made before init returned")
		}
		v, err := other.Get(ctx)
		return v + 1, err
	})
	v, err := l.Get(context.Background())
	require.Equal(t, lazyResult{11, nil}, lazyResult{v, err})
}

// TestLazyCtxValues: init's ctx carries the values of the Get that started
// the run, not its deadline.
func TestLazyCtxValues(t *testing.T) {
	l := ctxsync.NewLazy(func(ctx context.Context) (string, error) {
		if _, has := ctx.Deadline(); has {
			return "", errors.New("init got the caller's deadline")
		}
		s, _ := ctx.Value(flightCtxKey{}).(string)
		return s, nil
	})
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), flightCtxKey{}, "request-1"), time.Hour)
	defer cancel()
	v, err := l.Get(ctx)
	require.NoError(t, err)
	require.Equal(t, "request-1", v)
}

// TestLazyAcrossBubbles: a Lazy made outside a bubble is first run in one
// (the run fails and is left), then used outside; one made in a bubble is
// used after it.
func TestLazyAcrossBubbles(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	init := func(ctx context.Context) (int, error) {
		if fail.Load() {
			<-ctx.Done() // waits until every Get has left
			return 0, ctx.Err()
		}
		return 4, nil
	}
	leave := func(t *testing.T, l *ctxsync.Lazy[int]) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		_, err := l.Get(ctx)
		require.Equal(t, context.DeadlineExceeded, err)
	}
	outside := ctxsync.NewLazy(init)
	synctest.Test(t, func(t *testing.T) { leave(t, outside); synctest.Wait() })
	var inside *ctxsync.Lazy[int]
	synctest.Test(t, func(t *testing.T) {
		inside = ctxsync.NewLazy(init)
		leave(t, inside)
		synctest.Wait()
	})
	fail.Store(false)
	for _, l := range []*ctxsync.Lazy[int]{outside, inside} {
		v, err := l.Get(context.Background())
		require.Equal(t, lazyResult{4, nil}, lazyResult{v, err})
	}
}

// TestHammerLazy runs Gets with random cancellation on Lazies whose init
// fails, panics, calls runtime.Goexit or succeeds at random. It checks that
// every Get that succeeded got the one value kept, that Peek agrees once a
// Get has succeeded, that no Get whose ctx lives failed with a ctx error, and
// at the end that every run of init has returned.
func TestHammerLazy(t *testing.T) {
	for round := range testutil.HammerRounds(4) {
		var started, ended, made atomic.Int64
		l := ctxsync.NewLazy(func(ctx context.Context) (int64, error) {
			started.Add(1)
			defer ended.Add(1)
			id := started.Load()
			r := rand.New(rand.NewPCG(uint64(id), uint64(round)))
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Duration(r.IntN(50)) * time.Microsecond):
			}
			switch r.IntN(6) {
			case 0:
				panic(id)
			case 1:
				runtime.Goexit()
			case 2, 3:
				return 0, errors.New("failed")
			}
			made.Add(1)
			return id, nil
		})
		var kept atomic.Int64
		cxRun(8, func(_ int, r *rand.Rand) {
			for range 100 {
				ctx, cancel := cxCtx(r)
				func() {
					defer func() {
						if p := recover(); p != nil {
							_, ok := p.(*ctxsync.PanicError)
							assert.True(t, ok, "Get panicked with %v", p)
						}
					}()
					v, err := l.Get(ctx)
					switch {
					case err == nil:
						if !kept.CompareAndSwap(0, v) {
							assert.Equal(t, kept.Load(), v, "round %d: two values", round)
						}
						pv, ok := l.Peek()
						assert.True(t, ok)
						assert.Equal(t, v, pv)
					case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
						assert.Error(t, ctx.Err(), "failed with a ctx error while its ctx lives")
					}
				}()
				cancel()
			}
		})
		for started.Load() != ended.Load() {
			time.Sleep(time.Millisecond) // runs that every Get left
		}
		if v, ok := l.Peek(); ok {
			require.Equal(t, kept.Load() == 0 || kept.Load() == v, true, "round %d", round)
			require.NotZero(t, made.Load())
		} else {
			require.Zero(t, kept.Load(), "round %d: a Get got a value that Peek does not see", round)
		}
	}
}

// TestLazyCancelledGetNotGranted: a Get whose ctx ended before the run of
// init returned never gets the value, though the value is kept for the next.
func TestLazyCancelledGetNotGranted(t *testing.T) {
	var l *ctxsync.Lazy[int]
	var g *flightGate
	var first <-chan lazyResult
	cancelThenFree(t, 2000, func() (func(context.Context) error, func(), func()) {
		g = newFlightGate(1)
		l = ctxsync.NewLazy(g.fn)
		first = goGet(context.Background(), l)
		for g.runs.Load() == 0 {
			runtime.Gosched()
		}
		get := func(ctx context.Context) error { _, err := l.Get(ctx); return err }
		return get, func() { close(g.release) }, func() {
			require.Equal(t, lazyResult{1, nil}, <-first)
			v, ok := l.Peek()
			require.True(t, ok)
			require.Equal(t, 1, v)
		}
	})
}
