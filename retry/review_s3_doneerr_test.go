package retry_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/retry"
)

// s3DoneNoErrCtx is a caller's ctx whose Done channel is closed while its Err
// still returns nil (see the root package's test of the same name).
type s3DoneNoErrCtx struct{ context.Context }

var s3ClosedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (s3DoneNoErrCtx) Done() <-chan struct{} { return s3ClosedDone }
func (s3DoneNoErrCtx) Err() error            { return nil }

// Regression: the wait between attempts returned ctx.Err() when ctx's Done
// channel closed: nil for a ctx whose Err lags its channel, which the retry
// loop took for a wait served, and it retried at once, with no backoff (a
// Policy with MaxAttempts NoLimit spun). A wait cut short by the end of ctx
// must end the retries, whatever Err says in that moment.
func TestReviewS3_RetryWaitDoneClosedErrNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		start := time.Now()
		_, err := retry.Do(s3DoneNoErrCtx{context.Background()}, retry.Policy{MaxAttempts: 5, InitialDelay: time.Second},
			func(context.Context) (int, error) { calls++; return 0, errors.New("down") })
		if err == nil {
			t.Fatal("Do = nil")
		}
		if calls != 1 || time.Since(start) != 0 {
			t.Errorf("Do called fn %d times in %v under a ctx whose Done is closed, want once: the waits were skipped, not ended", calls, time.Since(start))
		}
	})
}
