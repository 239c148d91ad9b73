package ctxsync_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fuzz targets named Fuzz*Model run a script of operations on a primitive
// in a synctest bubble, one operation at a time, each followed by
// synctest.Wait, and check the primitive against a model kept the plain way.
// This file holds what they share: the blocking calls, run in goroutines.

// A modelWaiter is one blocking call, run in a goroutine, and the result its
// model expects of it once the model says it has returned.
type modelWaiter struct {
	what   string // the call, for messages: "Acquire(3)", "RLock"
	cancel context.CancelFunc
	res    chan error

	settled bool  // the model says it has returned
	want    error // and with this

	// item is what the call got, for calls that get one (Queue.Get), set
	// before res is sent. wantItem is what the model says.
	item, wantItem any
}

// startWaiter runs call in a goroutine with a ctx of its own, which the script
// may cancel.
func startWaiter(ctx context.Context, what string, call func(context.Context) error) *modelWaiter {
	return startItemWaiter(ctx, what, func(ctx context.Context) (any, error) { return nil, call(ctx) })
}

// startItemWaiter is startWaiter for a call that gets an item when it succeeds.
func startItemWaiter(ctx context.Context, what string, call func(context.Context) (any, error)) *modelWaiter {
	ctx, cancel := context.WithCancel(ctx)
	mw := &modelWaiter{what: what, cancel: cancel, res: make(chan error, 1)}
	go func() {
		item, err := call(ctx)
		if err == nil {
			mw.item = item
		}
		mw.res <- err
	}()
	return mw
}

func (mw *modelWaiter) settle(err error) { mw.settled, mw.want = true, err }

// checkWaiters checks, after synctest.Wait, that every call the model settled
// has returned what it says, and that every other call still waits. It drops
// the calls it has checked.
func checkWaiters(t *testing.T, all []*modelWaiter) []*modelWaiter {
	t.Helper()
	waiting := all[:0]
	for _, mw := range all {
		if !mw.settled {
			require.Empty(t, mw.res, "%s returned while the model has it waiting", mw.what)
			waiting = append(waiting, mw)
			continue
		}
		require.NotEmpty(t, mw.res, "%s still waits; the model says it returned %v", mw.what, mw.want)
		require.Equal(t, mw.want, <-mw.res, mw.what)
		require.Equal(t, mw.wantItem, mw.item, "%s got", mw.what)
	}
	return waiting
}

// A waitQueue is a model's queue of waiting calls, oldest first.
type waitQueue []*modelWaiter

// settle removes the i'th call and settles it with err.
func (q *waitQueue) settle(i int, err error) {
	(*q)[i].settle(err)
	*q = append((*q)[:i], (*q)[i+1:]...)
}

// cancel ends the ctx of the call that arg picks, if any waits: it returns
// ctx.Err(), and leaves the queue. It reports whether there was one.
func (q *waitQueue) cancel(arg int) bool {
	if len(*q) == 0 {
		return false
	}
	i := arg % len(*q)
	(*q)[i].cancel()
	q.settle(i, context.Canceled)
	return true
}

// cancelAll ends the calls still waiting, so that the bubble can end.
func cancelAll(all []*modelWaiter) {
	for _, mw := range all {
		mw.cancel()
	}
}
