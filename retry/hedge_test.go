package retry_test

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/retry"
)

var errHedge = errors.New("attempt failed")

// plenty is a Budget that never refuses a hedge in these tests.
func plenty() *retry.Budget { return retry.NewBudget(1, 1e6) }

// step is what an attempt of a scripted fn does: wait d (or until its ctx
// ends), then return v and err.
type step struct {
	d   time.Duration
	v   int
	err error
}

// scripted returns a fn whose i'th attempt does steps[i], and counts the
// attempts started and those that saw their ctx cancelled.
func scripted(steps ...step) (fn func(context.Context) (int, error), started, cancelled *atomic.Int32) {
	started, cancelled = new(atomic.Int32), new(atomic.Int32)
	return func(ctx context.Context) (int, error) {
		s := steps[started.Add(1)-1]
		select {
		case <-time.After(s.d):
			return s.v, s.err
		case <-ctx.Done():
			cancelled.Add(1)
			return -1, ctx.Err()
		}
	}, started, cancelled
}

func TestDoHedgedFastCallSendsNoCopy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, started, _ := scripted(step{d: time.Millisecond, v: 7})
		v, err := retry.DoHedged(t.Context(), retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}, fn)
		require.NoError(t, err)
		require.Equal(t, 7, v)
		time.Sleep(time.Second)
		require.EqualValues(t, 1, started.Load(), "attempts")
	})
}

func TestDoHedgedCopyWinsAndFirstIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, started, cancelled := scripted(step{d: time.Hour, v: 1}, step{d: 5 * time.Millisecond, v: 2})
		start := time.Now()
		v, err := retry.DoHedged(t.Context(), retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}, fn)
		require.NoError(t, err)
		require.Equal(t, 2, v, "the copy's value")
		require.Equal(t, 15*time.Millisecond, time.Since(start))
		require.EqualValues(t, 2, started.Load())
		require.EqualValues(t, 1, cancelled.Load(), "the first attempt's ctx is cancelled")
	})
}

func TestDoHedgedMaxHedges(t *testing.T) {
	for _, tc := range []struct {
		max, want int
	}{{0, 2}, {1, 2}, {3, 4}, {retry.NoLimit, 11}} {
		synctest.Test(t, func(t *testing.T) {
			steps := make([]step, 20)
			for i := range steps {
				steps[i] = step{d: time.Hour}
			}
			steps[10] = step{d: time.Nanosecond, v: 10} // the tenth copy answers at once
			fn, started, _ := scripted(steps...)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			_, _ = retry.DoHedged(ctx, retry.Hedge{Delay: 10 * time.Millisecond, MaxHedges: tc.max, Budget: plenty()}, fn)
			require.EqualValues(t, tc.want, started.Load(), "MaxHedges %d: attempts", tc.max)
		})
	}
}

// failsafe-go#141: a budget that runs out must not fail the attempts in
// flight. A refused hedge sends nothing, and the first attempt answers.
func TestDoHedgedRefusedHedgeLeavesFirstAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, started, cancelled := scripted(step{d: time.Second, v: 1})
		v, err := retry.DoHedged(t.Context(), retry.Hedge{Delay: time.Millisecond, Budget: retry.NewBudget(0, 0)}, fn)
		require.NoError(t, err)
		require.Equal(t, 1, v)
		require.EqualValues(t, 1, started.Load())
		require.EqualValues(t, 0, cancelled.Load())
	})
}

func TestDoHedgedFailureWaitsForCopyInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, _, _ := scripted(step{d: 20 * time.Millisecond, err: errHedge}, step{d: 30 * time.Millisecond, v: 2})
		v, err := retry.DoHedged(t.Context(), retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}, fn)
		require.NoError(t, err)
		require.Equal(t, 2, v)
	})
}

func TestDoHedgedFailureAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, started, _ := scripted(step{d: time.Millisecond, v: 3, err: errHedge})
		v, err := retry.DoHedged(t.Context(), retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}, fn)
		require.Same(t, errHedge, err, "the error as fn returned it")
		require.Equal(t, 3, v, "the value as fn returned it")
		time.Sleep(time.Second)
		require.EqualValues(t, 1, started.Load(), "no copy after the call ended")
	})
}

func TestDoHedgedLastFailureReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errCopy := errors.New("copy failed")
		fn, _, _ := scripted(step{d: 12 * time.Millisecond, v: 1, err: errHedge}, step{d: 5 * time.Millisecond, v: 2, err: errCopy})
		v, err := retry.DoHedged(t.Context(), retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}, fn)
		require.Same(t, errCopy, err)
		require.Equal(t, 2, v)
	})
}

func TestDoHedgedPermanentEndsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		perm := retry.Permanent(errHedge)
		fn, _, cancelled := scripted(step{d: time.Hour}, step{d: time.Millisecond, err: perm})
		start := time.Now()
		_, err := retry.DoHedged(t.Context(), retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}, fn)
		require.Same(t, perm, err)
		require.Equal(t, 11*time.Millisecond, time.Since(start))
		require.EqualValues(t, 1, cancelled.Load())
	})
}

func TestDoHedgedDoneCtx(t *testing.T) {
	calls := 0
	_, err := retry.DoHedged(testutil.Cancelled(), retry.Hedge{Budget: plenty()}, func(context.Context) (int, error) {
		calls++
		return 1, nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Same(t, context.Canceled, err, "ctx.Err() unwrapped")
	require.Zero(t, calls)
}

func TestDoHedgedCtxEndsWhileCopiesRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fn, _, cancelled := scripted(step{d: 15 * time.Millisecond, err: errHedge}, step{d: time.Hour})
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		_, err := retry.DoHedged(ctx, retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}, fn)
		require.Equal(t, context.DeadlineExceeded, err)
		synctest.Wait()
		require.EqualValues(t, 1, cancelled.Load(), "the copy's ctx ends")
	})
}

// A copy succeeds at the very instant the caller's ctx ends: the call
// returns the value or ctx.Err(), and in neither case is anything left
// running.
func TestDoHedgedCopyWinsAsCtxEnds(t *testing.T) {
	for range 50 {
		synctest.Test(t, func(t *testing.T) {
			fn, _, _ := scripted(step{d: time.Hour}, step{d: 10 * time.Millisecond, v: 2})
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
			defer cancel()
			v, err := retry.DoHedged(ctx, retry.Hedge{Delay: 10 * time.Millisecond, Budget: plenty()}, fn)
			if err == nil {
				require.Equal(t, 2, v)
			} else {
				require.Equal(t, context.DeadlineExceeded, err)
			}
		})
	}
}

func TestDoHedgedPanics(t *testing.T) {
	t.Run("first", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var copyCancelled atomic.Bool
			var n atomic.Int32
			require.PanicsWithValue(t, "boom", func() {
				_, _ = retry.DoHedged(t.Context(), retry.Hedge{Delay: time.Millisecond, Budget: plenty()}, func(ctx context.Context) (int, error) {
					if n.Add(1) == 1 {
						time.Sleep(5 * time.Millisecond)
						panic("boom")
					}
					<-ctx.Done()
					copyCancelled.Store(true)
					return 0, ctx.Err()
				})
			})
			synctest.Wait()
			require.True(t, copyCancelled.Load(), "the copy is cancelled")
		})
	})
	t.Run("copy", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int32
			require.PanicsWithValue(t, "copy boom", func() {
				_, _ = retry.DoHedged(t.Context(), retry.Hedge{Delay: time.Millisecond, Budget: plenty()}, func(ctx context.Context) (int, error) {
					if n.Add(1) == 2 {
						panic("copy boom")
					}
					<-ctx.Done() // the copy's panic cancels the first
					return 0, ctx.Err()
				})
			})
		})
	})
	t.Run("loser", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int32
			v, err := retry.DoHedged(t.Context(), retry.Hedge{Delay: time.Millisecond, Budget: plenty()}, func(ctx context.Context) (int, error) {
				if n.Add(1) == 2 {
					<-ctx.Done()
					panic("after the call") // dropped with the loser's result
				}
				time.Sleep(5 * time.Millisecond)
				return 1, nil
			})
			require.NoError(t, err)
			require.Equal(t, 1, v)
			synctest.Wait()
		})
	})
}

// fn calls back into DoHedged with the same Hedge, from the first attempt
// and from a copy: nothing is locked around fn.
func TestDoHedgedReentrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := retry.Hedge{Delay: time.Millisecond, Budget: plenty()}
		var n atomic.Int32
		v, err := retry.DoHedged(t.Context(), h, func(ctx context.Context) (int, error) {
			if n.Add(1) == 1 {
				time.Sleep(10 * time.Millisecond)
			}
			return retry.DoHedged(ctx, h, func(context.Context) (int, error) { return 5, nil })
		})
		require.NoError(t, err)
		require.Equal(t, 5, v)
	})
}

func TestHedgeValidate(t *testing.T) {
	ok := func(context.Context) (int, error) { return 0, nil }
	bad := map[string]retry.Hedge{
		"zero":                {},
		"Delay -1":            {Delay: -1, Budget: plenty()},
		"Delay MinInt64":      {Delay: math.MinInt64, Budget: plenty()},
		"MaxHedges -2":        {MaxHedges: -2, Budget: plenty()},
		"MaxHedges MinInt":    {MaxHedges: math.MinInt, Budget: plenty()},
		"Budget zero":         {Budget: new(retry.Budget)},
		"Budget nil, Delay 1": {Delay: 1},
	}
	for name, h := range bad {
		err := h.Validate()
		require.Error(t, err, name)
		require.Regexp(t, "^retry: ", err.Error(), name)
		requirePanics(t, func() { _, _ = retry.DoHedged(context.Background(), h, ok) })
		tr := &retry.Transport{Hedge: &h}
		require.Error(t, tr.Check(), name)
	}
	requirePanics(t, func() {
		//lint:ignore SA1012 a nil Context is the misuse under test
		_, _ = retry.DoHedged(nil, retry.Hedge{Budget: plenty()}, ok)
	})
	requirePanics(t, func() {
		_, _ = retry.DoHedged[int](context.Background(), retry.Hedge{Budget: plenty()}, nil)
	})
}

func TestHedgeExtremes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, h := range []retry.Hedge{
			{Delay: 1, MaxHedges: 1, Budget: plenty()},
			{Delay: time.Duration(math.MaxInt64), MaxHedges: math.MaxInt, Budget: plenty()},
			{Delay: time.Duration(math.MaxInt64 - 1), MaxHedges: retry.NoLimit, Budget: plenty()},
		} {
			fn, started, _ := scripted(step{d: 3, v: 1}, step{d: 1, v: 2}, step{d: 1, v: 3})
			v, err := retry.DoHedged(t.Context(), h, fn)
			require.NoError(t, err, "%+v", h)
			require.Contains(t, []int{1, 2}, v)
			require.LessOrEqual(t, started.Load(), int32(2))
		}
	})
}

// The Delay 0 estimate follows the service: it falls towards a fast
// service's latency, rises towards a slow one's, and stays between.
func TestHedgeDelayFollowsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := plenty()
		h := retry.Hedge{Budget: b}
		var lat atomic.Int64
		var attempts atomic.Int32
		fn := func(ctx context.Context) (int, error) {
			attempts.Add(1)
			select {
			case <-time.After(time.Duration(lat.Load())):
				return 1, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		run := func(d time.Duration, n int) (copies int32) {
			lat.Store(int64(d))
			attempts.Store(0)
			for range n {
				_, err := retry.DoHedged(t.Context(), h, fn)
				require.NoError(t, err)
			}
			return attempts.Load() - int32(n)
		}
		run(100*time.Millisecond, 1) // seeds the estimate
		// Every call now slower than the estimate: it rises, hedging
		// until it is above, then hedging about 6% of calls.
		run(400*time.Millisecond, 200)
		copies := run(400*time.Millisecond, 1000)
		require.Less(t, copies, int32(150), "copies of 1000 calls at a steady latency")
		copies = run(time.Millisecond, 3000)
		require.Less(t, copies, int32(300), "copies of 3000 calls after the service sped up")
	})
}

// A Budget made outside a bubble keeps its estimate inside one, and one
// made inside keeps working after the bubble.
func TestHedgeAcrossBubbles(t *testing.T) {
	b := plenty()
	h := retry.Hedge{Budget: b}
	ok := func(context.Context) (int, error) { return 1, nil }
	_, err := retry.DoHedged(context.Background(), h, ok)
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		fn, _, _ := scripted(step{d: time.Hour}, step{d: time.Millisecond, v: 2})
		v, err := retry.DoHedged(t.Context(), h, fn)
		require.NoError(t, err)
		require.Equal(t, 2, v)
	})
	var inner retry.Hedge
	synctest.Test(t, func(t *testing.T) {
		inner = retry.Hedge{Budget: plenty()}
		_, err := retry.DoHedged(t.Context(), inner, ok)
		require.NoError(t, err)
	})
	v, err := retry.DoHedged(context.Background(), inner, ok)
	require.NoError(t, err)
	require.Equal(t, 1, v)
}

// Fast failures say nothing of how long answers take: a dependency that
// refuses connections for a while (answering in microseconds) must not drag
// the Delay 0 estimate down, and leave every call hedged once it answers
// again at its usual latency.
func TestHedgeDelayIgnoresFastFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := retry.Hedge{Budget: plenty()}
		var failing atomic.Bool
		var attempts atomic.Int32
		fn := func(ctx context.Context) (int, error) {
			attempts.Add(1)
			if failing.Load() {
				return 0, errors.New("connection refused")
			}
			select {
			case <-time.After(100 * time.Millisecond):
				return 1, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		for range 300 { // seeds, then settles on the service's latency
			_, err := retry.DoHedged(t.Context(), h, fn)
			require.NoError(t, err)
		}
		failing.Store(true)
		for range 3000 {
			_, err := retry.DoHedged(t.Context(), h, fn)
			require.Error(t, err)
		}
		failing.Store(false)
		attempts.Store(0)
		for range 200 {
			_, err := retry.DoHedged(t.Context(), h, fn)
			require.NoError(t, err)
		}
		copies := attempts.Load() - 200
		require.Less(t, copies, int32(40), "copies of 200 calls at the usual latency, after a run of fast failures")
	})
}
