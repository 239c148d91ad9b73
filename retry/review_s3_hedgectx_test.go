package retry_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/ctxsync/ctxsync/retry"
)

// errS3Panic is the panic of s3ArmedCtx's Err once armed.
var errS3Panic = errors.New("the caller's ctx.Err panics")

// s3ArmedCtx is a caller's ctx whose Err panics once armed: the caller's
// code, which may panic, and must not run under an internal lock.
type s3ArmedCtx struct {
	context.Context
	armed atomic.Bool
}

func (c *s3ArmedCtx) Err() error {
	if c.armed.Load() {
		panic(errS3Panic)
	}
	return c.Context.Err()
}

// Regression: DoHedged's settle, which decides the call once the first
// attempt has failed, called the caller's ctx.Err() with the call's mutex
// held, to learn whether a copy still in flight is worth waiting for. A ctx
// whose Err panics there leaves the mutex locked and the copies running
// with a live ctx (endLocked never ran): the copy's goroutine then blocks
// for good on the mutex when its fn returns. The ctx must be looked at
// through its Done channel, read before the lock (waitq.Ended), and
// ctx.Err() called unlocked, once every attempt that lost is cancelled.
//
// One processor, so that the caller's goroutine reaches settle before the
// copy, which the failure of the first attempt releases, has run.
func TestReviewS3_DoHedgedCallerCtxErrUnderTheCallsLock(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	inner, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &s3ArmedCtx{Context: inner}
	copyCtx := make(chan context.Context, 1)
	firstFailed := make(chan struct{})
	var calls atomic.Int32
	h := retry.Hedge{Delay: 1, Budget: retry.NewBudget(1, 100)}
	fail := errors.New("attempt failed")
	var p any
	func() {
		defer func() { p = recover() }()
		_, _ = retry.DoHedged(ctx, h, func(actx context.Context) (int, error) {
			if calls.Add(1) == 1 {
				cc := <-copyCtx // the copy has started
				copyCtx <- cc
				ctx.armed.Store(true)
				close(firstFailed)
				return 0, fail
			}
			copyCtx <- actx
			<-firstFailed
			return 0, fail
		})
	}()
	if p != nil && p != errS3Panic {
		t.Fatalf("DoHedged panicked with %v", p)
	}
	cc := <-copyCtx
	select {
	case <-cc.Done():
	default:
		t.Errorf("DoHedged returned (panic: %v) with the copy's ctx live: the copies were not cancelled, and the call's mutex was left held", p)
	}
}
