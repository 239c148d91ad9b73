package ctxsync_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync"
)

// Regression: fn's ctx (flightCtx) makes its Done channel when first asked
// for, and one asked for after the ctx was cancelled is a new channel,
// closed, made by whichever goroutine asks. Asked for first in a
// testing/synctest bubble, that channel belongs to the bubble, and every
// later receive from it outside the bubble, or in another bubble, ends the
// program ("receive on synctest channel from outside bubble"). fn may keep
// its ctx (a value a Lazy makes may keep its init's ctx for its values and
// derive contexts from it; context.WithCancel reads the parent's Done): a
// Flight used in one bubble and then in another, or outside, then ends the
// program. context.WithCancel(context.WithoutCancel(ctx)), which flightCtx
// stands for, returns the context package's closed channel, made outside
// every bubble, and works everywhere. The right behaviour: the Done of a
// ctx cancelled before Done was asked for is a closed channel that belongs
// to no bubble. The test runs itself in a child process to see the program
// end.
func TestReviewS4_FlightCtxDoneAfterCancelAcrossBubbles(t *testing.T) {
	if os.Getenv("CTXSYNC_TEST_S4_FLIGHT_DONE") == "1" {
		var f ctxsync.Flight[string, int]
		var kept context.Context
		_, _, _ = f.Do(context.Background(), "k", func(ctx context.Context) (int, error) {
			kept = ctx // Done never asked for while the call runs
			return 1, nil
		})
		for kept.Err() == nil {
			runtime.Gosched() // cancelled by fn's goroutine, perhaps after Do returned
		}
		for range 2 {
			synctest.Test(t, func(t *testing.T) {
				child, cancel := context.WithCancel(kept) // reads kept.Done()
				defer cancel()
				<-child.Done()
				<-kept.Done()
			})
		}
		<-kept.Done()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReviewS4_FlightCtxDoneAfterCancelAcrossBubbles$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CTXSYNC_TEST_S4_FLIGHT_DONE=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && strings.Contains(string(out), "synctest channel from outside bubble") {
		t.Fatalf("the Done channel of fn's ctx, asked for first after the call in a bubble, ended the program once used in another:\n%s", firstLinesS4(string(out), 8))
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func firstLinesS4(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
