package ctxsync_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync"
)

// Regression: Weighted.TryAcquire that finds its units free behind the
// waiters flag now looks at the queue (notifyLocked): it reads each waiter's
// Done channel and may grant, which wakes the waiter by a send on its
// channel. Made outside a bubble while a goroutine inside one waits, that
// look touches the bubble's channels and the runtime ends the program. The
// package doc lists the calls refused across the edge of a bubble, "an
// Unlock, Release, Resize, Put, Get, ...": TryAcquire, which never waits and
// until now never looked at the queue, is not among them, and a
// load-shedding TryAcquire outside the bubble (a server goroutine started
// before it) worked. Right: TryAcquire that may serve the waiters is refused
// there as the others are, and the doc says so; or it does not look. The
// test runs itself in a child process to see the program end, and checks
// that the doc names TryAcquire among the refused calls once it does.
func TestReviewFx13cWeightedTryAcquireOutsideBubble(t *testing.T) {
	if os.Getenv("CTXSYNC_TEST_FX13C_TRY_OUTSIDE") == "1" {
		w := ctxsync.NewWeighted(10)
		call, back := make(chan struct{}), make(chan bool)
		go func() { // outside every bubble
			for range call {
				back <- w.TryAcquire(2)
			}
		}()
		defer close(call)
		synctest.Test(t, func(t *testing.T) {
			if !w.TryAcquire(8) {
				t.Fatal("TryAcquire(8) of 10 free")
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			gave := make(chan error, 1)
			go func() { gave <- w.Acquire(ctx, 5) }()
			synctest.Wait() // queued: 2 free, 5 asked
			call <- struct{}{}
			if <-back {
				t.Error("TryAcquire(2) overtook a live waiter")
			}
			cancel()
			<-gave
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReviewFx13cWeightedTryAcquireOutsideBubble$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CTXSYNC_TEST_FX13C_TRY_OUTSIDE=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && strings.Contains(string(out), "synctest channel from outside bubble") {
		doc, rerr := os.ReadFile("doc.go")
		if rerr != nil {
			t.Fatal(rerr)
		}
		if !strings.Contains(string(doc), "TryAcquire") {
			t.Fatalf("a TryAcquire made outside a bubble while a goroutine waits inside ended the program, and the doc does not list it among the refused calls:\n%s", firstLinesS4(string(out), 6))
		}
		return // refused, as the doc says
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
