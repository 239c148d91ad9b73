package ratelimit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// doneNoErrCtx is a caller's ctx whose Done channel is closed while its Err
// still returns nil (see the root package's test of the same name).
type doneNoErrCtx struct{ context.Context }

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (doneNoErrCtx) Done() <-chan struct{} { return closedDone }
func (doneNoErrCtx) Err() error            { return nil }

// Regression: a Wait that gave up because its ctx's Done channel was closed
// returned ctx.Err(), read once unlocked: nil for a ctx whose Err lags its
// channel, so the caller went ahead with no event taken, past the limit. It
// must return an error (context.Canceled while Err is nil), as the head of
// the queue and as a waiter behind it.
func TestReviewS3_WaitDoneClosedErrNilIsNotAllowed(t *testing.T) {
	for _, behind := range []bool{false, true} {
		name := "head"
		if behind {
			name = "behind"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bg := context.Background()
				l := NewTokenBucket(1, 1)
				if err := l.Wait(bg); err != nil {
					t.Fatal(err)
				}
				head := make(chan error, 1)
				if behind {
					go func() { head <- l.Wait(bg) }()
					synctest.Wait()
				}
				if err := l.Wait(doneNoErrCtx{bg}); err == nil {
					t.Errorf("Wait with no token, under a ctx whose Done is closed and Err nil = nil, want an error")
				}
				if behind {
					if err := <-head; err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Second) // virtual: the next token
				if err := l.Wait(bg); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
