package ctxsync_test

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReviewFx13aBarrierBrokenOutsideBubble: Broken is a look (the README
// lists it among the looks that never block), and until Broken began to scan
// the gathering round for parties whose ctx has ended, a look from outside a
// testing/synctest bubble at a Barrier whose parties wait inside one only
// read a flag. Now it reads each waiting party's Done channel, made in the
// bubble, and the Go runtime ends the program: "select on synctest channel
// from outside bubble", even when no party has given up. The package
// documentation lists the calls that are fatal from outside a bubble as those
// that serve the waiters (Unlock, Release, Put, Set, ...); a look is not one
// of them, and Broken's doc says nothing of it. The rule of the package is
// that a use the runtime refuses is named by the doc: Broken's doc must say
// that it is refused from outside the bubble of the parties waiting (or
// Broken must not read their channels). The test holds once Broken's doc
// names the case; until then it shows the fatal error in a child process.
func TestReviewFx13aBarrierBrokenOutsideBubble(t *testing.T) {
	if testutil.InChild(t) {
		b := ctxsync.NewBarrier(2, nil) // outside every bubble, as a package-level one is
		waiting, looked := make(chan struct{}), make(chan struct{})
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			synctest.Test(t, func(t *testing.T) {
				party := arriveAsync(t.Context(), b)
				synctest.Wait()
				close(waiting)
				<-looked // a channel of no bubble: the clock stops meanwhile, no more
				b.Abort()
				<-party
			})
		}()
		<-waiting
		if b.Broken() {
			t.Error("Broken: no party has given up")
		}
		close(looked)
		<-ended
		return
	}
	doc := testutil.DocText(t, "barrier.go")
	if strings.Contains(doc, "Broken from outside the bubble") {
		return // Broken's doc names the case
	}
	out, err := testutil.RunChild(t)
	if err == nil {
		return // the look from outside the bubble worked
	}
	t.Errorf("Broken from outside a bubble whose parties wait is a fatal error, and its doc does not say so: %v\n%.300s", err, out)
}
