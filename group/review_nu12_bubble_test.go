package group_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestReviewNu12LimitWaitInBubbleThenWaitOutside: the Group's doc said that a
// Group made outside a testing/synctest bubble and used in one may serve
// outside it later, "but for one use": once a task has asked for the group's
// ctx.Done() in the bubble. A Group with a Limit, whose Go waited for a slot
// in the bubble, is refused as well, though no task asked for anything: Go
// waits for its slot on the group's ctx, whose Done channel the context
// package then makes in the bubble, and Wait, outside, closes it: "fatal
// error: close of synctest channel from outside bubble", which no recover
// catches. The program dies where the doc promised it would work.
//
// The fatal error is the runtime's and cannot be caught, so the scenario runs
// in a child process. The test holds when the Group does not die, or when its
// doc names this case among those the runtime refuses.
func TestReviewNu12LimitWaitInBubbleThenWaitOutside(t *testing.T) {
	if testutil.InChild(t) {
		g, _ := group.New(context.Background(), group.Options{Limit: 2})
		synctest.Test(t, func(t *testing.T) {
			for range 3 { // the third Go waits for a slot
				_ = g.Go(func(context.Context) error { time.Sleep(time.Second); return nil })
			}
			time.Sleep(2 * time.Second) // every task has returned in the bubble
			synctest.Wait()
		})
		_ = g.Wait()
		return
	}
	out, err := testutil.RunChild(t)
	if err == nil {
		return // the Group served outside the bubble, as a task-free use should
	}
	if !strings.Contains(string(out), "synctest channel from outside bubble") {
		t.Fatalf("the child failed otherwise: %v\n%s", err, out)
	}
	if !strings.Contains(testutil.DocText(t, "group.go"), "or Go has waited there for a slot") {
		t.Errorf("a Group whose Go waited for a slot of its Limit in a bubble dies when Wait runs outside it, and Group's doc does not say so:\n%s", firstLines(string(out), 3))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
