package group_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// The goroutines of a group take the next task when theirs returns (see
// worker.go). These tests pin what that must never change: no task waits for
// its goroutine behind a task that runs, whatever the tasks do.

// TestTasksNeverWaitBehindARunningTask: tasks that each wait until every
// task has started, given by the caller and by tasks, all start: none waits
// for a goroutine held by a task that blocks. With a limit, as many start as
// the limit allows.
func TestTasksNeverWaitBehindARunningTask(t *testing.T) {
	for _, limit := range []int{0, 5} {
		synctest.Test(t, func(t *testing.T) {
			testutil.OneProcessor(t) // no processor to run a goroutine early
			g, _ := group.New(context.Background(), group.Options{Limit: limit})
			var started atomic.Int32
			release := make(chan struct{})
			task := func(context.Context) error {
				started.Add(1)
				<-release
				return nil
			}
			given := make(chan struct{})
			go func() { // with a limit, Go waits for slots
				defer close(given)
				for range 20 {
					g.Go(task)
				}
			}()
			// A task that gives tasks to the group and waits for them.
			if limit == 0 {
				g.Go(func(context.Context) error {
					started.Add(1)
					for range 10 {
						g.Go(task)
					}
					<-release
					return nil
				})
			}
			synctest.Wait()
			want := int32(31)
			if limit > 0 {
				want = int32(limit)
			}
			if n := started.Load(); n != want {
				t.Errorf("Limit %d: %d tasks started while every task blocks, want %d", limit, n, want)
			}
			close(release)
			<-given
			if err := g.Wait(); err != nil {
				t.Errorf("Wait = %v", err)
			}
		})
	}
}

// TestGoexitAndPanicLeaveTasksWaitingToRun: a task that calls
// runtime.Goexit ends its goroutine, and one that panics is recovered in
// it; the tasks that were waiting to start run all the same.
func TestGoexitAndPanicLeaveTasksWaitingToRun(t *testing.T) {
	for _, kind := range []string{"goexit", "panic"} {
		synctest.Test(t, func(t *testing.T) {
			testutil.OneProcessor(t) // the tasks wait in the queue, not in goroutines
			g, _ := group.New(context.Background(), group.Options{CollectAll: true})
			var ran atomic.Int32
			release := make(chan struct{})
			for i := range 30 {
				g.Go(func(context.Context) error {
					ran.Add(1)
					switch {
					case i%7 == 3 && kind == "goexit":
						runtime.Goexit()
					case i%7 == 3:
						panic(i)
					case i%5 == 0:
						<-release
					}
					return nil
				})
			}
			synctest.Wait()
			close(release)
			var err error
			func() {
				defer func() { recover() }()
				err = g.Wait()
			}()
			if ran.Load() != 30 {
				t.Errorf("%s: %d of 30 tasks ran", kind, ran.Load())
			}
			if kind == "goexit" {
				joined, _ := err.(interface{ Unwrap() []error })
				if joined == nil || len(joined.Unwrap()) != 4 || !errors.Is(err, group.ErrGoexit) {
					t.Errorf("goexit: Wait = %v, want ErrGoexit 4 times", err)
				}
			}
		})
	}
}
