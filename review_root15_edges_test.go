package ctxsync_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// TestConditionWaitForPredicateWaits: a predicate may call Wait itself (it
// runs holding the Lock); WaitFor goes on holding the Lock when it returns.
func TestConditionWaitForPredicateWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		ctx := t.Context()
		go func() {
			time.Sleep(time.Second)
			c.NotifyAll()
		}()
		require.NoError(t, c.Lock(ctx))
		calls := 0
		require.NoError(t, c.WaitFor(ctx, func() bool {
			if calls++; calls == 1 {
				require.NoError(t, c.Wait(ctx))
				return true
			}
			return false
		}))
		require.Equal(t, 1, calls)
		require.True(t, c.Locked())
		require.Zero(t, c.Waiting())
		c.Unlock()
		require.True(t, c.TryLock(), "nothing left queued")
		c.Unlock()
	})
}

// TestConditionWaitForPredicateGoexit: a predicate that calls runtime.Goexit
// ends its goroutine holding the Lock, as a panic would; the caller's deferred
// Unlock runs, and the Condition is whole.
func TestConditionWaitForPredicateGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := ctxsync.NewCondition(nil)
		go func() {
			_ = c.Lock(context.Background())
			defer c.Unlock()
			_ = c.WaitFor(context.Background(), func() bool { runtime.Goexit(); return true })
			t.Error("WaitFor returned after Goexit")
		}()
		synctest.Wait()
		require.False(t, c.Locked())
		require.Zero(t, c.Waiting())
		require.True(t, c.TryLock())
		c.Unlock()
	})
}

// TestFlightGoexitReachesJoinerAfterStarterLeft: the caller that started the
// call leaves; fn then calls runtime.Goexit, and the caller that joined gets
// ErrGoexit. So does one whose fn panics and then calls Goexit in a deferred
// call: fn ended with Goexit, which ends the panic.
func TestFlightGoexitReachesJoinerAfterStarterLeft(t *testing.T) {
	for _, panics := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var f ctxsync.Flight[string, int]
			ctx, cancel := context.WithCancel(t.Context())
			release := make(chan struct{})
			go func() {
				_, err, _ := f.Do(ctx, "k", func(context.Context) (int, error) {
					<-release
					if panics {
						defer runtime.Goexit()
						panic("fn panicked")
					}
					runtime.Goexit()
					return 0, nil
				})
				assert.Equal(t, context.Canceled, err)
			}()
			synctest.Wait()
			res := make(chan error)
			go func() {
				_, err, _ := f.Do(t.Context(), "k", func(context.Context) (int, error) { return 1, nil })
				res <- err
			}()
			synctest.Wait()
			cancel()
			synctest.Wait()
			close(release)
			require.ErrorIs(t, <-res, ctxsync.ErrGoexit)
			require.Zero(t, f.Len())
		})
	}
}

// TestLazyGoexitThenErrorThenValue: neither a Goexit nor an error of init is
// kept; the run after them makes the value, which is.
func TestLazyGoexitThenErrorThenValue(t *testing.T) {
	runs := 0
	errRun := errors.New("the second run failed")
	l := ctxsync.NewLazy(func(ctx context.Context) (int, error) {
		switch runs++; runs {
		case 1:
			runtime.Goexit()
		case 2:
			return 0, errRun
		}
		return 7, nil
	})
	_, err := l.Get(context.Background())
	require.ErrorIs(t, err, ctxsync.ErrGoexit)
	_, err = l.Get(context.Background())
	require.ErrorIs(t, err, errRun)
	v, err := l.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, 7, v)
	v, err = l.Get(context.Background())
	require.NoError(t, err)
	require.Equal(t, 7, v)
	require.Equal(t, 3, runs)
}

// TestWatchWaitAfterMaxVersion: no version is above math.MaxUint64, so a Wait
// after it ends only with its ctx or Close; after Close it fails at once.
func TestWatchWaitAfterMaxVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := ctxsync.NewWatch(1)
		ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
		defer cancel()
		w.Store(2)
		_, ver, err := w.Wait(ctx, math.MaxUint64)
		require.Equal(t, context.DeadlineExceeded, err)
		require.Zero(t, ver)
		res := make(chan error)
		go func() {
			_, _, err := w.Wait(t.Context(), math.MaxUint64)
			res <- err
		}()
		synctest.Wait()
		w.Close()
		require.ErrorIs(t, <-res, ctxsync.ErrClosed)
		_, _, err = w.Wait(t.Context(), math.MaxUint64)
		require.ErrorIs(t, err, ctxsync.ErrClosed)
		v, ver, err := w.Wait(t.Context(), 0)
		require.NoError(t, err)
		require.Equal(t, 2, v)
		require.Equal(t, uint64(2), ver)
	})
}

// TestWaitGroupGoPanicThenGoexit: a task whose panic a deferred call of its
// own ends with runtime.Goexit ended with Goexit: it is done, and the program
// goes on (see WaitGroup.Go).
func TestWaitGroupGoPanicThenGoexit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg ctxsync.WaitGroup
		wg.Go(func() {
			defer runtime.Goexit()
			panic("the task panicked")
		})
		require.NoError(t, wg.Wait(t.Context()))
		require.Zero(t, wg.Count())
	})
}

// TestConditionPlacesAcrossBubbles: the places a Condition queues on its Lock
// for notified waiters, and the nodes they leave, are made in the bubble of
// the goroutines that use them: a Condition and Lock made outside a synctest
// bubble serve notified waiters that find the Lock taken inside one, and ones
// made inside serve them after it ends, and in the next bubble.
func TestConditionPlacesAcrossBubbles(t *testing.T) {
	round := func(t *testing.T, l *ctxsync.Lock, c *ctxsync.Condition, bubble bool) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				_ = l.Lock(context.Background())
				_ = c.Wait(context.Background())
				l.Unlock()
			})
		}
		for c.Waiting() < 4 {
			if bubble {
				synctest.Wait()
			} else {
				runtime.Gosched()
			}
		}
		require.NoError(t, l.Lock(context.Background()))
		c.NotifyAll()
		for l.Waiting() < 4 {
			if bubble {
				synctest.Wait()
			} else {
				runtime.Gosched()
			}
		}
		l.Unlock()
		wg.Wait()
		require.Zero(t, l.Waiting())
	}
	l := ctxsync.NewLock()
	c := ctxsync.NewCondition(l)
	round(t, l, c, false)
	var l2 *ctxsync.Lock
	var c2 *ctxsync.Condition
	synctest.Test(t, func(t *testing.T) {
		round(t, l, c, true)
		l2 = ctxsync.NewLock()
		c2 = ctxsync.NewCondition(l2)
		round(t, l2, c2, true)
	})
	round(t, l, c, false)
	round(t, l2, c2, false)
	synctest.Test(t, func(t *testing.T) {
		round(t, l2, c2, true)
		round(t, l, c, true)
	})
}
