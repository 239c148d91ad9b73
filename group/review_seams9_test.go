package group_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/group"
)

// TestReviewSeams9_ForEachOverQueueStopsAtFirstError pins a stall of the
// idiom ForEach's documentation gave for draining a ctxsync.Queue: ForEach
// over q.All(ctx). When f fails, ForEach stops pulling, but it is already
// in the middle of a pull: q.All waits for the next item, on ctx, which the
// failure does not end. With the queue idle, ForEach returned the first
// error only when ctx ended (an hour here) or a producer came with another
// job. ForEach cannot interrupt seq, so the documented idiom now pulls the
// queue under a ctx that f's failure ends: it must return f's first error
// at once, with the jobs it did not pull left for CloseNow.
func TestReviewSeams9_ForEachOverQueueStopsAtFirstError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := ctxsync.NewQueue[int](0)
		for i := range 3 {
			_ = q.Put(context.Background(), i)
		}
		// Job 2 fails, the last: the others are done by then, and ForEach,
		// with slots free, is pulling the next.
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		errBadJob := errors.New("bad job")
		start := time.Now()
		// As ForEach's doc has it now: the queue is pulled under a ctx that
		// the first failure ends.
		pull, stop := context.WithCancel(ctx)
		defer stop()
		err := group.ForEach(ctx, q.All(pull), 8, func(ctx context.Context, job int) error {
			defer q.TaskDone()
			if job == 2 {
				time.Sleep(time.Millisecond)
				stop()
				return errBadJob
			}
			return nil
		})
		if took := time.Since(start); !errors.Is(err, errBadJob) || took > time.Minute {
			t.Fatalf("ForEach = %v after %v, want %v at once", err, took, errBadJob)
		}
		if left := q.CloseNow(); len(left) != 0 {
			t.Errorf("CloseNow() = %v, want none: every job was pulled", left)
		}
		if err := q.Join(ctx); err != nil {
			t.Errorf("Join() = %v", err)
		}
	})
}
