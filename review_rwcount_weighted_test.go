package ctxsync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// secondErrCtx runs hook at its second Err call, the fast paths' look after
// their take, and then panics with errSecondLook if panics is set.
type secondErrCtx struct {
	context.Context
	calls  int
	panics bool
	hook   func()
}

var errSecondLook = errors.New("the look after the take panics")

func (c *secondErrCtx) Err() error {
	if c.calls++; c.calls == 2 {
		c.hook()
		if c.panics {
			panic(errSecondLook)
		}
	}
	return c.Context.Err()
}

// TestFastPathGiveBackAfterResize: Weighted's fast path takes every unit, a
// waiter queues, and a Resize shrinks the capacity to the waiter's size (free
// units -2), all while the fast path looks at ctx after its take; then its
// ctx turns out ended, or its Err panics. Its units must go back through the
// path that wakes the waiter (giveBack), which then holds its 2 units. The
// Semaphore's fast path, the same way with a waiter queued during its look,
// must hand its permit on.
func TestFastPathGiveBackAfterResize(t *testing.T) {
	for _, panics := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			w := ctxsync.NewWeighted(4)
			waiter := make(chan error, 1)
			inner, cancel := context.WithCancel(context.Background())
			ctx := &secondErrCtx{Context: inner, panics: panics, hook: func() {
				go func() { waiter <- w.Acquire(context.Background(), 2) }()
				synctest.Wait()
				require.Equal(t, 1, w.Waiting())
				w.Resize(2)
				require.Equal(t, int64(-2), w.Available())
				cancel()
			}}
			func() {
				defer func() {
					if p := recover(); p != nil && p != errSecondLook {
						panic(p)
					}
				}()
				require.Equal(t, context.Canceled, w.Acquire(ctx, 4), "panics: %v", panics)
			}()
			synctest.Wait()
			require.NotEmpty(t, waiter, "the units went back and the waiter sleeps on (panics: %v)", panics)
			require.NoError(t, <-waiter)
			require.Zero(t, w.Available())
			w.Release(2)
			require.Equal(t, int64(2), w.Available())

			s := ctxsync.NewSemaphore(1)
			got := make(chan error, 1)
			inner, cancel = context.WithCancel(context.Background())
			sctx := &secondErrCtx{Context: inner, panics: panics, hook: func() {
				go func() { got <- s.Acquire(context.Background()) }()
				synctest.Wait()
				cancel()
			}}
			func() {
				defer func() {
					if p := recover(); p != nil && p != errSecondLook {
						panic(p)
					}
				}()
				require.Equal(t, context.Canceled, s.Acquire(sctx))
			}()
			synctest.Wait()
			require.NotEmpty(t, got, "the permit went back and the waiter sleeps on (panics: %v)", panics)
			require.NoError(t, <-got)
			s.Release()
			require.True(t, s.TryAcquire())
			s.Release()
		})
	}
}
