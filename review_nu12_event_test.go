package ctxsync_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReviewNu12EventDoneOutsideStallsABubble: the package documentation
// says that a primitive made outside every bubble (a package-level one) works
// inside one, and Event.Done's doc names one exception, a channel taken
// inside a bubble and used outside it. The reverse stalls: once Done has been
// asked for outside every bubble, the Event keeps that channel until the next
// Clear, and a Wait inside a bubble waits on it, a channel of no bubble. The
// waiting goroutine is not durably blocked, so the bubble's clock stops: a
// Wait with a one-second deadline never returns, and the test hangs until its
// timeout with nothing to say why. (Until Set: the flag raised, Wait returns
// at once.)
//
// The Event cannot close a channel for the bubble that it has not made there,
// so the doc must say it. The test holds once the doc names the case; until
// then it shows the stall in a child process, which a watchdog on the real
// clock ends (the child's run takes microseconds when it does not stall).
func TestReviewNu12EventDoneOutsideStallsABubble(t *testing.T) {
	if testutil.InChild(t) {
		var e ctxsync.Event
		_ = e.Done() // outside every bubble, as a select on a package-level Event does
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = e.Wait(ctx)
			})
		}()
		select {
		case <-ended:
		case <-time.After(20 * time.Second):
			println("STALLED: the bubble's clock stopped")
			os.Exit(3)
		}
		return
	}
	if strings.Contains(testutil.DocText(t, "event.go"), "asked for outside every bubble") {
		return // the doc names the case
	}
	out, err := testutil.RunChild(t)
	if err == nil {
		return // the Wait in the bubble ended at its deadline
	}
	t.Errorf("an Event whose Done was asked for outside a bubble stalls a Wait in one, and its doc does not say so: %v\n%.300s", err, out)
}
