package ctxsync_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// A lookThenCtx is a caller's ctx that, at the first call of the method
// named at, answers as the ctx is at that moment and then runs then: what
// other goroutines do right after the look (end the ctx, Store), made to
// happen there.
type lookThenCtx struct {
	context.Context
	at   string
	then func()
	done atomic.Bool
}

func (c *lookThenCtx) hook(method string) {
	if method == c.at && c.done.CompareAndSwap(false, true) {
		c.then()
	}
}

func (c *lookThenCtx) Err() error {
	err := c.Context.Err()
	c.hook("Err")
	return err
}

func (c *lookThenCtx) Done() <-chan struct{} {
	d := c.Context.Done()
	c.hook("Done")
	return d
}

// TestReviewF11a_WatchWaitStoreAfterCtxEndedFails: 3cf71a6 made a Wait woken
// by a Store fail if its ctx had ended too, so that a caller that gave up
// before the Store never gets its value; but two paths still hand it over.
// Wait looks at ctx before it loads the version (the fast path), and a Store
// that came between the look and the load, after ctx ended, is returned
// with a nil error; and a Store that came while Wait asked for ctx.Done
// (the caller's code) is found by join, and the loop's fast path returns it
// without a look at ctx. Right, as WaitGroup.Wait and Lazy.Get do: load the
// version, then look at ctx, so that a value returned was there while ctx
// was alive; and look again whenever the loop finds a newer one.
func TestReviewF11a_WatchWaitStoreAfterCtxEndedFails(t *testing.T) {
	for _, at := range []string{"Err", "Done"} {
		t.Run("after "+at, func(t *testing.T) {
			w := ctxsync.NewWatch(0)
			_, ver := w.Load()
			inner, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx := &lookThenCtx{Context: inner, at: at, then: func() {
				cancel()   // the caller gives up,
				w.Store(1) // and only then the value comes
			}}
			v, got, err := w.Wait(ctx, ver)
			require.True(t, ctx.done.Load(), "the ctx's %s was not called", at)
			require.ErrorIs(t, err, context.Canceled, "Wait = (%d, %d, %v): the value stored after the caller gave up", v, got, err)
			require.Zero(t, got)
		})
	}
}

// TestReviewF11a_WatchChangesStoreAfterCtxEndedYieldsNothing: Changes looks
// at ctx, then loads the current value to yield first: a value stored after
// ctx ended, between the two, was yielded to a loop whose caller had given
// up ("A ctx that is already done yields nothing"). Right: load, then look,
// as Wait does; the value loaded was there while ctx was alive.
func TestReviewF11a_WatchChangesStoreAfterCtxEndedYieldsNothing(t *testing.T) {
	w := ctxsync.NewWatch(0)
	inner, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &lookThenCtx{Context: inner, at: "Err", then: func() {
		cancel()
		w.Store(1)
	}}
	var got []int
	for v := range w.Changes(ctx) {
		got = append(got, v)
	}
	require.True(t, ctx.done.Load(), "the ctx's Err was not called")
	require.NotContains(t, got, 1, "Changes yielded %v: 1 was stored after its ctx ended", got)
}
