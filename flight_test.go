package ctxsync_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// flightResult is what one Do returned.
type flightResult struct {
	v      int
	err    error
	shared bool
}

// goDo runs f.Do in a goroutine and returns a channel with its result.
func goDo(ctx context.Context, f *ctxsync.Flight[string, int], key string, fn func(context.Context) (int, error)) <-chan flightResult {
	res := make(chan flightResult, 1)
	go func() {
		v, err, shared := f.Do(ctx, key, fn)
		res <- flightResult{v, err, shared}
	}()
	return res
}

// flightGate is an fn that blocks until released (or its ctx ends), counting its
// runs and keeping the ctx of the last.
type flightGate struct {
	release chan struct{}
	runs    atomic.Int32
	ctx     atomic.Pointer[context.Context]
	v       int
}

func newFlightGate(v int) *flightGate { return &flightGate{release: make(chan struct{}), v: v} }

func (g *flightGate) fn(ctx context.Context) (int, error) {
	g.runs.Add(1)
	g.ctx.Store(&ctx)
	select {
	case <-g.release:
		return g.v, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (g *flightGate) lastCtx() context.Context { return *g.ctx.Load() }

func TestFlightDo(t *testing.T) {
	var f ctxsync.Flight[string, int] // the zero value is ready
	v, err, shared := f.Do(context.Background(), "k", func(context.Context) (int, error) { return 7, nil })
	require.Equal(t, flightResult{7, nil, false}, flightResult{v, err, shared})
	boom := errors.New("boom")
	v, err, shared = f.Do(context.Background(), "k", func(context.Context) (int, error) { return 3, boom })
	require.Equal(t, flightResult{3, boom, false}, flightResult{v, err, shared}, "the value comes with the error, as fn returned it")
	require.Equal(t, 0, f.Len())
}

// TestFlightShared: callers that come while a call is in flight share it;
// each gets its result, with shared true, and fn runs once.
func TestFlightShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		g := newFlightGate(42)
		var results []<-chan flightResult
		for range 5 {
			results = append(results, goDo(t.Context(), &f, "k", g.fn))
			synctest.Wait()
		}
		require.Equal(t, 1, f.Len())
		close(g.release)
		for _, r := range results {
			require.Equal(t, flightResult{42, nil, true}, <-r)
		}
		require.EqualValues(t, 1, g.runs.Load())
		require.Equal(t, 0, f.Len())
		synctest.Wait() // fn's goroutine cancels its ctx after handing out the result
		require.ErrorIs(t, g.lastCtx().Err(), context.Canceled, "fn's ctx ends when fn returns")
	})
}

// TestFlightCallerLeaves: a caller whose ctx ends leaves with ctx.Err(); the
// call goes on for the others, under a ctx that is not cancelled, and shared
// counts only those that got the result.
func TestFlightCallerLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		g := newFlightGate(1)
		first := goDo(t.Context(), &f, "k", g.fn)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		v, err, shared := f.Do(ctx, "k", g.fn)
		require.Equal(t, flightResult{0, context.DeadlineExceeded, false}, flightResult{v, err, shared})
		require.NoError(t, g.lastCtx().Err(), "one caller still waits: fn's ctx lives")
		close(g.release)
		require.Equal(t, flightResult{1, nil, false}, <-first, "the result went to one caller")
	})
}

// TestFlightFirstCallerLeaves: the caller that started the call may leave
// too (singleflight's could not): the call goes on for the others.
func TestFlightFirstCallerLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		g := newFlightGate(1)
		ctx, cancel := context.WithCancel(t.Context())
		first := goDo(ctx, &f, "k", g.fn)
		synctest.Wait()
		second := goDo(t.Context(), &f, "k", g.fn)
		synctest.Wait()
		cancel()
		require.Equal(t, flightResult{0, context.Canceled, false}, <-first)
		require.NoError(t, g.lastCtx().Err())
		close(g.release)
		require.Equal(t, flightResult{1, nil, false}, <-second)
		require.EqualValues(t, 1, g.runs.Load())
	})
}

// TestFlightLastLeaverCancels: fn's ctx is cancelled once every caller has
// left, the key is free at once, and the next Do starts a new call under a
// live ctx rather than join the cancelled one.
func TestFlightLastLeaverCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		g := newFlightGate(1)
		ctxA, cancelA := context.WithCancel(t.Context())
		ctxB, cancelB := context.WithCancel(t.Context())
		a := goDo(ctxA, &f, "k", g.fn)
		synctest.Wait()
		b := goDo(ctxB, &f, "k", g.fn)
		synctest.Wait()
		cancelA()
		require.Equal(t, context.Canceled, (<-a).err)
		synctest.Wait()
		abandoned := g.lastCtx()
		require.NoError(t, abandoned.Err(), "B still waits")
		cancelB()
		require.Equal(t, context.Canceled, (<-b).err)
		require.ErrorIs(t, abandoned.Err(), context.Canceled, "every caller left: fn's ctx is cancelled")
		require.Equal(t, 0, f.Len(), "the key is free as soon as the last caller has left")
		synctest.Wait() // the abandoned fn returns

		g2 := newFlightGate(2)
		c := goDo(t.Context(), &f, "k", g2.fn)
		synctest.Wait()
		require.NoError(t, g2.lastCtx().Err(), "a new call, under a live ctx")
		close(g2.release)
		require.Equal(t, flightResult{2, nil, false}, <-c)
	})
}

type flightCtxKey struct{}

// TestFlightCtxValues: fn's ctx carries the first caller's values, not its
// deadline.
func TestFlightCtxValues(t *testing.T) {
	var f ctxsync.Flight[string, int]
	ctx := context.WithValue(context.Background(), flightCtxKey{}, "first")
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	_, _, _ = f.Do(ctx, "k", func(ctx context.Context) (int, error) {
		require.Equal(t, "first", ctx.Value(flightCtxKey{}))
		_, has := ctx.Deadline()
		require.False(t, has, "the first caller's deadline is its own")
		return 0, nil
	})
}

// TestFlightPanic: a panic in fn reaches every waiting caller, in its own
// goroutine, as a *PanicError with fn's stack; the Flight is whole after.
func TestFlightPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		release := make(chan struct{})
		fn := func(context.Context) (int, error) {
			<-release
			panic("kaboom")
		}
		panics := make(chan any, 3)
		for range 3 {
			go func() {
				defer func() { panics <- recover() }()
				_, _, _ = f.Do(t.Context(), "k", fn)
			}()
			synctest.Wait()
		}
		close(release)
		for range 3 {
			p, ok := (<-panics).(*ctxsync.PanicError)
			require.True(t, ok, "Do panics with a *PanicError")
			require.Equal(t, "kaboom", p.Value)
			require.Contains(t, string(p.Stack), "TestFlightPanic", "the stack is fn's")
			require.True(t, strings.HasPrefix(p.Error(), "ctxsync: "))
		}
		require.Equal(t, 0, f.Len())
		v, err, _ := f.Do(t.Context(), "k", func(context.Context) (int, error) { return 1, nil })
		require.Equal(t, 1, v)
		require.NoError(t, err)
	})
}

// TestFlightPanicNil: panic(nil) is a panic too (a *runtime.PanicNilError).
func TestFlightPanicNil(t *testing.T) {
	var f ctxsync.Flight[string, int]
	defer func() {
		p := recover().(*ctxsync.PanicError)
		var pn interface{ RuntimeError() }
		require.ErrorAs(t, p, &pn)
	}()
	_, _, _ = f.Do(context.Background(), "k", func(context.Context) (int, error) { panic(nil) })
}

// TestFlightPanicEveryoneLeft: a panic in a call that every caller had left
// is dropped (see Flight): the program goes on, and the key is free.
func TestFlightPanicEveryoneLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		release := make(chan struct{})
		ended := make(chan struct{})
		ctx, cancel := context.WithCancel(t.Context())
		r := goDo(ctx, &f, "k", func(context.Context) (int, error) {
			defer close(ended)
			<-release // ignores its ctx
			panic("nobody hears this")
		})
		synctest.Wait()
		cancel()
		require.Equal(t, context.Canceled, (<-r).err)
		close(release)
		<-ended
		synctest.Wait() // fn's goroutine has ended, the panic dropped
		require.Equal(t, 0, f.Len())
	})
}

// TestFlightGoexit: runtime.Goexit in fn gives every waiting caller
// ErrGoexit; their goroutines go on.
func TestFlightGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		release := make(chan struct{})
		fn := func(context.Context) (int, error) {
			<-release
			runtime.Goexit()
			return 1, nil
		}
		a := goDo(t.Context(), &f, "k", fn)
		synctest.Wait()
		b := goDo(t.Context(), &f, "k", fn)
		synctest.Wait()
		close(release)
		require.Equal(t, flightResult{0, ctxsync.ErrGoexit, true}, <-a)
		require.Equal(t, flightResult{0, ctxsync.ErrGoexit, true}, <-b)
		require.Equal(t, 0, f.Len())
	})
}

// TestFlightForget: after Forget, the next Do starts a new call; the callers
// of the forgotten call still get its result.
func TestFlightForget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		g1, g2 := newFlightGate(1), newFlightGate(2)
		a := goDo(t.Context(), &f, "k", g1.fn)
		synctest.Wait()
		f.Forget("k")
		require.Equal(t, 0, f.Len())
		b := goDo(t.Context(), &f, "k", g2.fn)
		synctest.Wait()
		require.Equal(t, 1, f.Len())
		close(g1.release)
		require.Equal(t, flightResult{1, nil, false}, <-a)
		require.Equal(t, 1, f.Len(), "the end of the forgotten call leaves the new one")
		c := goDo(t.Context(), &f, "k", g1.fn) // joins the second call
		synctest.Wait()
		close(g2.release)
		require.Equal(t, flightResult{2, nil, true}, <-b)
		require.Equal(t, flightResult{2, nil, true}, <-c)
		require.EqualValues(t, 1, g1.runs.Load())
		f.Forget("none") // a key with no call: nothing to do
		require.Equal(t, 0, f.Len())
	})
}

// TestFlightCallBack: fn may call the Flight for another key, and Forget its
// own, without deadlock: no lock is held while fn runs.
func TestFlightCallBack(t *testing.T) {
	var f ctxsync.Flight[string, int]
	v, err, _ := f.Do(context.Background(), "outer", func(ctx context.Context) (int, error) {
		require.Equal(t, 1, f.Len())
		f.Forget("outer")
		inner, err, _ := f.Do(ctx, "inner", func(context.Context) (int, error) { return 5, nil })
		return inner + 1, err
	})
	require.NoError(t, err)
	require.Equal(t, 6, v)
	require.Equal(t, 0, f.Len())
}

// TestFlightCallsOwnKey: fn that calls Do for its own key joins its own call
// and waits for itself, as with singleflight, until the ctx it gave that Do
// ends; the outer callers then get what fn returns.
func TestFlightCallsOwnKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		var fn func(ctx context.Context) (int, error)
		fn = func(ctx context.Context) (int, error) {
			inner, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			_, err, _ := f.Do(inner, "k", fn)
			require.Equal(t, context.DeadlineExceeded, err)
			return 9, nil
		}
		v, err, shared := f.Do(t.Context(), "k", fn)
		require.Equal(t, flightResult{9, nil, false}, flightResult{v, err, shared})
		require.Equal(t, 0, f.Len())
	})
}

// TestFlightDoneCtx: a done ctx fails Do even when a call for the key is in
// flight, and starts nothing.
func TestFlightDoneCtx(t *testing.T) {
	for _, c := range doneCtxCases(t) {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var f ctxsync.Flight[string, int]
				g := newFlightGate(1)
				v, err, shared := f.Do(c.ctx, "k", g.fn)
				require.Equal(t, flightResult{0, c.want, false}, flightResult{v, err, shared})
				require.Zero(t, g.runs.Load(), "nothing started")
				r := goDo(t.Context(), &f, "k", g.fn)
				synctest.Wait()
				v, err, shared = f.Do(c.ctx, "k", g.fn)
				require.Equal(t, flightResult{0, c.want, false}, flightResult{v, err, shared}, "a call in flight")
				close(g.release)
				require.Equal(t, flightResult{1, nil, false}, <-r, "the done ctx did not count as a caller")
			})
		})
	}
}

func TestFlightMisuse(t *testing.T) {
	var f ctxsync.Flight[string, int]
	fn := func(context.Context) (int, error) { return 0, nil }
	//lint:ignore SA1012 a nil ctx is what is tested
	require.PanicsWithValue(t, "ctxsync: nil Context", func() { f.Do(nil, "k", fn) })
	require.PanicsWithValue(t, "ctxsync: Flight.Do with nil fn", func() { f.Do(context.Background(), "k", nil) })
	require.PanicsWithValue(t, "ctxsync: Flight.Do with nil fn", func() { f.Do(testutil.Cancelled(), "k", nil) },
		"misuse panics whatever the ctx")
	require.Equal(t, 0, f.Len())
}

// TestFlightZeroKey: the zero value of a key type is a key like any other,
// and keys of a struct type work.
func TestFlightZeroKey(t *testing.T) {
	type key struct {
		a int
		b string
	}
	var f ctxsync.Flight[key, string]
	for _, k := range []key{{}, {a: -1}, {a: int(^uint(0) >> 1), b: "max"}} {
		v, err, _ := f.Do(context.Background(), k, func(context.Context) (string, error) { return k.b + "!", nil })
		require.NoError(t, err)
		require.Equal(t, k.b+"!", v)
	}
	require.Equal(t, 0, f.Len())
}

// TestFlightCancelledCallerNotGranted: a caller whose ctx ended before the
// result came never gets it, and does not count in shared.
func TestFlightCancelledCallerNotGranted(t *testing.T) {
	var f *ctxsync.Flight[string, int]
	var g *flightGate
	var first <-chan flightResult
	cancelThenFree(t, 2000, func() (func(context.Context) error, func(), func()) {
		f, g = new(ctxsync.Flight[string, int]), newFlightGate(1)
		first = goDo(context.Background(), f, "k", g.fn)
		for f.Len() == 0 || g.runs.Load() == 0 {
			runtime.Gosched()
		}
		call := func(ctx context.Context) error { _, err, _ := f.Do(ctx, "k", g.fn); return err }
		return call, func() { close(g.release) }, func() {
			require.Equal(t, flightResult{1, nil, false}, <-first, "shared counts only who got the result")
			require.EqualValues(t, 1, g.runs.Load())
		}
	})
}

// TestFlightGrantRace: the result comes after a waiter's ctx ended and
// before it ran again: it fails, and the other caller gets the result alone.
func TestFlightGrantRace(t *testing.T) {
	var f ctxsync.Flight[string, int]
	var shared atomic.Bool
	errA, errB := runGrantRace(t, func(t *testing.T) grantRace {
		g := newFlightGate(1)
		do := func(ctx context.Context) error {
			_, err, sh := f.Do(ctx, "k", g.fn)
			if err == nil {
				shared.Store(sh)
			}
			return err
		}
		started := goDo(t.Context(), &f, "k", g.fn) // starts the call
		synctest.Wait()
		return grantRace{first: do, second: do, grant: func() {
			close(g.release)
			require.Equal(t, flightResult{1, nil, true}, <-started)
		}}
	})
	require.Equal(t, context.Canceled, errA)
	require.NoError(t, errB)
	require.True(t, shared.Load(), "two callers got it: the starter and second")
	require.Equal(t, 0, f.Len())
}

// TestFlightAcrossBubbles: a Flight made outside any bubble is used in one,
// then outside, then in another; and one made in a bubble is used after it.
func TestFlightAcrossBubbles(t *testing.T) {
	use := func(t *testing.T, f *ctxsync.Flight[string, int]) {
		g := newFlightGate(3)
		r := goDo(context.Background(), f, "k", g.fn)
		for f.Len() == 0 {
			time.Sleep(time.Millisecond) // virtual inside a bubble
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_, err, _ := f.Do(ctx, "k", g.fn)
		cancel()
		require.Equal(t, context.DeadlineExceeded, err)
		close(g.release)
		require.Equal(t, flightResult{3, nil, false}, <-r)
		require.Equal(t, 0, f.Len())
	}
	var outside ctxsync.Flight[string, int]
	synctest.Test(t, func(t *testing.T) { use(t, &outside) })
	use(t, &outside)
	synctest.Test(t, func(t *testing.T) { use(t, &outside) })

	var inside *ctxsync.Flight[string, int]
	synctest.Test(t, func(t *testing.T) {
		inside = new(ctxsync.Flight[string, int])
		use(t, inside)
	})
	use(t, inside)
}

// TestHammerFlight runs callers on a few keys with random cancellation, and
// fns that return, fail, panic, call runtime.Goexit, or wait for their ctx,
// while calls are forgotten, by callers and by fns for their own key.
// It checks that every result went to a caller of its key, that shared is
// true exactly for results that went to more than one caller, that no caller
// whose ctx lives was failed with a ctx error, and at the end that no call is
// left, every fn has returned, and every fn's ctx has ended.
func TestHammerFlight(t *testing.T) {
	for round := range testutil.HammerRounds(4) {
		var f ctxsync.Flight[int, int]
		var (
			nextID         atomic.Int64
			started, ended atomic.Int64
			mu             sync.Mutex
			got            = map[int]int{}  // call id: callers that got its result
			sharedSeen     = map[int]bool{} // call id: one of them saw shared true
			unshared       = map[int]bool{} // call id: one of them saw shared false
			fnCtxs         []context.Context
		)
		record := func(id int, shared bool) {
			mu.Lock()
			defer mu.Unlock()
			got[id]++
			if shared {
				sharedSeen[id] = true
			} else {
				unshared[id] = true
			}
		}
		cxRun(8, func(_ int, r *rand.Rand) {
			for range 100 {
				key, mode, pause := r.IntN(3), r.IntN(9), time.Duration(r.IntN(100))*time.Microsecond
				if r.IntN(8) == 0 {
					f.Forget(r.IntN(3)) // the next Do starts a call beside the forgotten one
				}
				fn := func(ctx context.Context) (int, error) {
					started.Add(1)
					defer ended.Add(1)
					id := int(nextID.Add(1))
					mu.Lock()
					fnCtxs = append(fnCtxs, ctx)
					mu.Unlock()
					v := id*4 + key
					switch mode {
					case 0:
						panic(v)
					case 1:
						runtime.Goexit()
					case 2:
						select { // until every caller left, or a while
						case <-ctx.Done():
							return v, ctx.Err()
						case <-time.After(pause):
						}
					case 3:
						return v, errors.New("failed")
					case 4:
						f.Forget(key) // from inside the call: its callers keep it
						time.Sleep(pause)
					default:
						time.Sleep(pause)
					}
					return v, nil
				}
				ctx, cancel := cxCtx(r)
				func() {
					defer func() {
						if p := recover(); p != nil {
							v := p.(*ctxsync.PanicError).Value.(int)
							assert.Equal(t, key, v%4, "a panic of another key's call")
						}
					}()
					v, err, shared := f.Do(ctx, key, fn)
					switch {
					case err == ctxsync.ErrGoexit:
					case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
						assert.Error(t, ctx.Err(), "failed with a ctx error while its ctx lives")
						assert.False(t, shared)
					default:
						assert.Equal(t, key, v%4, "the result of another key's call")
						record(v/4, shared)
					}
				}()
				cancel()
			}
		})
		require.Equal(t, 0, f.Len(), "round %d: a call left in the map", round)
		for started.Load() != ended.Load() {
			time.Sleep(time.Millisecond) // fns that every caller left, still running
		}
		for _, ctx := range fnCtxs {
			select { // cancelled just after fn returns, by its goroutine
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: a fn's ctx still lives", round)
			}
		}
		for id, n := range got {
			require.Equal(t, n > 1, sharedSeen[id], "round %d: call %d went to %d callers", round, id, n)
			require.Equal(t, n == 1, unshared[id], "round %d: call %d went to %d callers", round, id, n)
		}
	}
}
