package group_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReviewNu12DoneMadeOutsideStallsABubble: the Group's doc said that a
// Group made outside a testing/synctest bubble works in one. Its ctx has one
// Done channel, made where it is first asked for; once that was outside
// every bubble (by a task that selected on ctx.Done(), or a Go that waited
// for a slot of its Limit), a Go that waits for a slot in a bubble, or a
// task that waits on ctx.Done() there, waits on a channel of no bubble: the
// goroutine is not durably blocked, the bubble's clock stops, and the test
// hangs until its timeout, with nothing to say why.
//
// Nothing can be closed for it from inside the bubble, so the Group cannot
// serve it; its doc must say so. The test holds once the doc names the case;
// until then it shows the stall in a child process, which a watchdog on the
// real clock ends (the child's run takes microseconds when it does not stall).
func TestReviewNu12DoneMadeOutsideStallsABubble(t *testing.T) {
	if testutil.InChild(t) {
		g, _ := group.New(context.Background(), group.Options{Limit: 1})
		// Outside any bubble, a task looks at its ctx's Done, as one that
		// selects on it does: the group's ctx makes the channel here.
		returned := make(chan struct{})
		_ = g.Go(func(ctx context.Context) error {
			defer close(returned)
			select {
			case <-ctx.Done():
			default:
			}
			return nil
		})
		<-returned
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			synctest.Test(t, func(t *testing.T) {
				_ = g.Go(func(context.Context) error { time.Sleep(time.Second); return nil })
				_ = g.Go(func(context.Context) error { return nil }) // waits for the slot
				time.Sleep(time.Second)
				synctest.Wait()
			})
		}()
		select {
		case <-ended:
			_ = g.Wait()
		case <-time.After(20 * time.Second):
			println("STALLED: the bubble's clock stopped")
			os.Exit(3)
		}
		return
	}
	if strings.Contains(testutil.DocText(t, "group.go"), "made outside every bubble") {
		return // the doc names the case
	}
	out, err := testutil.RunChild(t)
	if err == nil {
		return // the Group served the bubble
	}
	t.Errorf("a Group whose ctx.Done() was first asked for outside a bubble stalls the bubble's clock when a Go waits for a slot in it, and Group's doc does not say so: %v\n%s", err, firstLines(string(out), 3))
}
