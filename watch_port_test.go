package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// The tests of this file are tokio's tests of sync::watch (tokio/tests/
// sync_watch.rs at commit 067ddff), re-expressed against Watch. The
// translation:
//
//   - tokio splits a watch into a Sender and Receivers; each Receiver keeps
//     the version it has seen. A Watch has no handles: the version a reader
//     has seen is the after it passes to Wait. rx.changed() is
//     Wait(ctx, seen); rx.borrow() is Load; borrow_and_update() is Load, the
//     version read becoming the reader's seen; has_changed() is "the version
//     Load returns is above seen".
//   - Dropping the Sender is Close. tokio's changed() then fails with
//     RecvError once the receiver has seen the last value; Wait fails with
//     ErrClosed.
//   - A future that is polled and pending is a Wait in a goroutine that has
//     not returned once the bubble is idle (synctest.Wait); "is woken" and
//     "poll is ready" are that it has returned. Dropping a pending future is
//     ending its ctx.

// portWatch is one reader of a Watch, as a tokio Receiver is: the Watch and
// the version it has seen.
type portWatch struct {
	w    *ctxsync.Watch[string]
	seen uint64
}

func newPortWatch(v string) *portWatch {
	w := ctxsync.NewWatch(v)
	_, ver := w.Load()
	return &portWatch{w, ver}
}

func (rx *portWatch) clone() *portWatch { c := *rx; return &c }

// changed starts rx.changed(): a Wait for a version above the one rx has
// seen, under a ctx that cancel ends (dropping the future).
func (rx *portWatch) changed(ctx context.Context) (res <-chan watchGot[string], cancel context.CancelFunc) {
	ctx, cancel = context.WithCancel(ctx)
	return watchGo(ctx, rx.w, rx.seen), cancel
}

// ready checks that the changed() behind res completed with want (nil or
// ErrClosed), and marks its version seen.
func (rx *portWatch) ready(t *testing.T, res <-chan watchGot[string], want error) {
	t.Helper()
	synctest.Wait()
	require.NotEmpty(t, res, "changed() is pending; want it ready")
	g := <-res
	require.Equal(t, want, g.err)
	if g.err == nil {
		rx.seen = g.ver
	}
}

// borrow is *rx.borrow(): the current value, leaving seen as it is.
func (rx *portWatch) borrow() string { v, _ := rx.w.Load(); return v }

// borrowAndUpdate is rx.borrow_and_update().
func (rx *portWatch) borrowAndUpdate() string {
	v, ver := rx.w.Load()
	rx.seen = ver
	return v
}

// hasChanged is rx.has_changed(). tokio fails it once the Sender is gone;
// here that is a Wait for a version above seen that fails with ErrClosed
// instead of waiting, which a Wait under a ctx ended after the bubble is idle
// tells apart.
func (rx *portWatch) hasChanged(t *testing.T) (bool, error) {
	if _, ver := rx.w.Load(); ver > rx.seen {
		return true, nil
	}
	ctx, cancel := context.WithCancel(t.Context())
	res := watchGo(ctx, rx.w, rx.seen)
	synctest.Wait()
	cancel()
	if g := <-res; g.err == ctxsync.ErrClosed {
		return false, g.err
	}
	return false, nil
}

func TestPortTokioWatchSingleRxRecv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rx := newPortWatch("one")
		{
			// Not initially notified.
			res, cancel := rx.changed(t.Context())
			watchPending(t, res)
			cancel()
		}
		require.Equal(t, "one", rx.borrow())
		{
			res, cancel := rx.changed(t.Context())
			watchPending(t, res)
			rx.w.Store("two")
			rx.ready(t, res, nil)
			cancel()
		}
		require.Equal(t, "two", rx.borrow())
		{
			res, cancel := rx.changed(t.Context())
			watchPending(t, res)
			rx.w.Close() // drop(tx)
			rx.ready(t, res, ctxsync.ErrClosed)
			cancel()
		}
		require.Equal(t, "two", rx.borrow())
	})
}

func TestPortTokioWatchMultiRx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rx1 := newPortWatch("one")
		rx2 := rx1.clone()
		{
			r1, c1 := rx1.changed(t.Context())
			r2, c2 := rx2.changed(t.Context())
			watchPending(t, r1)
			watchPending(t, r2)
			c1()
			c2()
		}
		require.Equal(t, "one", rx1.borrow())
		require.Equal(t, "one", rx2.borrow())

		r2, c2 := rx2.changed(t.Context())
		{
			r1, c1 := rx1.changed(t.Context())
			watchPending(t, r1)
			watchPending(t, r2)
			rx1.w.Store("two")
			// Both are woken; only t1 is polled here.
			rx1.ready(t, r1, nil)
			c1()
		}
		require.Equal(t, "two", rx1.borrow())
		{
			r1, c1 := rx1.changed(t.Context())
			watchPending(t, r1)
			rx1.w.Store("three")
			rx1.ready(t, r1, nil)
			// t2 is ready. Where the port differs: a tokio future runs only
			// when polled, so t2 marks "three" seen, polled now. A Wait runs
			// in its goroutine as soon as "two" woke it, and returned that
			// value and its version, which rx2 now has seen.
			synctest.Wait()
			g := <-r2
			require.NoError(t, g.err)
			require.Equal(t, "two", g.v, "Wait returns the value that woke it")
			rx2.seen = g.ver
			c1()
		}
		require.Equal(t, "three", rx1.borrow())
		c2() // drop(t2): rx2 never marked "two" or "three" seen
		require.Equal(t, "three", rx2.borrow())
		{
			r1, c1 := rx1.changed(t.Context())
			r2, c2 := rx2.changed(t.Context())
			watchPending(t, r1)
			// tokio has t2 pending here: it saw "three". In the port rx2
			// saw "two" (see above), so "three" is newer and its changed()
			// is ready at once, as tokio's is for a version not yet seen.
			// The port marks "three" seen and waits again.
			rx2.ready(t, r2, nil)
			c2()
			r2, c2 = rx2.changed(t.Context())
			watchPending(t, r2)
			rx1.w.Store("four")
			rx1.ready(t, r1, nil)
			rx2.ready(t, r2, nil)
			c1()
			c2()
		}
		require.Equal(t, "four", rx1.borrow())
		require.Equal(t, "four", rx2.borrow())
	})
}

func TestPortTokioWatchRxObservesFinalValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Initial value.
		rx := newPortWatch("one")
		rx.w.Close()
		{
			res, cancel := rx.changed(t.Context())
			rx.ready(t, res, ctxsync.ErrClosed)
			cancel()
		}
		require.Equal(t, "one", rx.borrow())

		// Sending a value.
		rx = newPortWatch("one")
		rx.w.Store("two")
		{
			res, cancel := rx.changed(t.Context())
			rx.ready(t, res, nil)
			cancel()
		}
		require.Equal(t, "two", rx.borrow())
		{
			res, cancel := rx.changed(t.Context())
			watchPending(t, res)
			rx.w.Store("three")
			rx.w.Close()
			rx.ready(t, res, nil) // the value before Close comes first
			cancel()
		}
		require.Equal(t, "three", rx.borrow())
		{
			res, cancel := rx.changed(t.Context())
			rx.ready(t, res, ctxsync.ErrClosed)
			cancel()
		}
		require.Equal(t, "three", rx.borrow())
	})
}

// tokio's poll_close waits, on the Sender, for every Receiver to be dropped,
// and then send fails. A Watch has no receivers to count, so there is no
// Sender-side closed(); the part that carries over is the last line: a Store
// after Close does not take (tokio returns an error; Store, which has none to
// return, drops the value).
func TestPortTokioWatchPollClose(t *testing.T) {
	rx := newPortWatch("one")
	rx.w.Close()
	rx.w.Store("two")
	require.Equal(t, "one", rx.borrow(), "send after close does not take")
}

func TestPortTokioWatchBorrowAndUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rx := newPortWatch("one")
		changed, err := rx.hasChanged(t)
		require.NoError(t, err)
		require.False(t, changed)

		rx.w.Store("two")
		changed, err = rx.hasChanged(t)
		require.NoError(t, err)
		require.True(t, changed)
		res, c := rx.changed(t.Context())
		rx.ready(t, res, nil)
		c()
		res, c = rx.changed(t.Context())
		watchPending(t, res)
		c()
		changed, err = rx.hasChanged(t)
		require.NoError(t, err)
		require.False(t, changed)

		rx.w.Store("three")
		changed, err = rx.hasChanged(t)
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, "three", rx.borrowAndUpdate())
		res, c = rx.changed(t.Context())
		watchPending(t, res)
		c()
		changed, err = rx.hasChanged(t)
		require.NoError(t, err)
		require.False(t, changed)

		rx.w.Close()
		require.Equal(t, "three", rx.borrowAndUpdate())
		res, c = rx.changed(t.Context())
		rx.ready(t, res, ctxsync.ErrClosed)
		c()
		_, err = rx.hasChanged(t)
		require.Equal(t, ctxsync.ErrClosed, err)
	})
}

// tokio's reopened_after_subscribe counts Receivers (the Sender is closed
// while none exists, and reopens on subscribe). A Watch has no receivers and
// is closed only by Close, for good: there is nothing to port.

// tokio's send_modify_panic changes the value in place with a function that
// panics: the change stays and is not announced. Watch has no such method
// (values are replaced whole, so Load can read without a lock); the nearest
// user code it runs is a Changes loop body, whose panic leaves the Watch
// whole: see TestWatchChangesBodyPanics.
