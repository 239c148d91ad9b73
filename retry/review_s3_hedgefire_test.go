package retry_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/retry"
)

// s3DoneCtx is a caller's ctx whose Done panics once armed.
type s3DoneCtx struct {
	context.Context
	armed atomic.Bool
}

func (c *s3DoneCtx) Done() <-chan struct{} {
	if c.armed.Load() {
		panic("the caller's ctx.Done panics")
	}
	return c.Context.Done()
}

// Regression: DoHedged makes each copy's ctx with context.WithCancel of the
// caller's ctx in the hedge timer's callback, a goroutine of its own, which
// calls the ctx's Done (and Value, for a ctx of the caller's own type): the
// caller's code, run where nothing recovers its panic. A Done that panics
// there, once the call is under way, ends the program instead of reaching
// the caller (DoHedged says a copy's panic does). Making the copy's ctx in
// the copy's goroutine is not enough: the cancel function of every ctx made
// from the caller's calls its Done again (context's removeChild), and the
// copy that wins cancels the first attempt's. Every attempt's ctx should be
// made from one ctx of the context package made in the caller's goroutine,
// whose methods never call the caller's ctx, and cancelled there (at the
// release of the winner's). The test runs itself in a child process to see
// the program end. The panic may reach the caller from DoHedged, in the
// caller's goroutine: that is where the caller's code belongs.
func TestReviewS3_HedgeTimerRunsCallerCtxWhereNothingRecovers(t *testing.T) {
	if os.Getenv("RETRY_TEST_S3_HEDGE_FIRE") == "1" {
		synctest.Test(t, func(t *testing.T) {
			ctx := &s3DoneCtx{Context: context.Background()}
			h := retry.Hedge{Delay: 10 * time.Millisecond, Budget: retry.NewBudget(1, 100)}
			var n atomic.Int32
			var v int
			var err error
			func() {
				defer func() {
					if p := recover(); p == "the caller's ctx.Done panics" {
						v, err = 2, nil // it reached the caller, as it should
					} else if p != nil {
						panic(p)
					}
				}()
				v, err = retry.DoHedged(ctx, h, func(actx context.Context) (int, error) {
					if n.Add(1) == 1 {
						ctx.armed.Store(true) // the call is under way
						<-actx.Done()         // slow: the copy answers
						return 0, actx.Err()
					}
					return 2, nil
				})
			}()
			if err != nil || v != 2 {
				t.Errorf("DoHedged = %v, %v; want the copy's 2, nil", v, err)
			}
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReviewS3_HedgeTimerRunsCallerCtxWhereNothingRecovers$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RETRY_TEST_S3_HEDGE_FIRE=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && strings.Contains(string(out), "panic: the caller's ctx.Done panics") {
		t.Fatalf("the caller's ctx.Done, run by the hedge timer, ended the program:\n%s", firstLines(string(out), 12))
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
