package group_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/ctxsync/ctxsync/group"
)

// TestReviewNu12MapGoexit pins what Map does with an f that calls
// runtime.Goexit (as t.FailNow does), which its doc left unsaid while
// MapAll's says it: in the calling goroutine, which runs the first worker
// and so always item 0, Goexit ends the caller, as it asked, once the calls
// in flight have returned; in a worker of its own, the item fails with
// ErrGoexit, which Map returns as the first error.
func TestReviewNu12MapGoexit(t *testing.T) {
	t.Run("caller", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var othersReturned, atExit atomic.Int32
			ended := make(chan bool, 1)
			go func() {
				returned := false
				defer func() {
					atExit.Store(othersReturned.Load())
					ended <- returned
				}()
				started := make(chan struct{})
				_, _ = group.Map(context.Background(), []int{0, 1, 2}, 3, func(ctx context.Context, i int) (int, error) {
					if i == 0 {
						<-started // item 1 runs in a worker of its own
						runtime.Goexit()
					}
					if i == 1 {
						close(started)
					}
					<-ctx.Done() // cancelled by the Goexit
					othersReturned.Add(1)
					return i, ctx.Err()
				})
				returned = true
			}()
			if <-ended {
				t.Fatal("Map returned in a goroutine whose f called runtime.Goexit")
			}
			if n := atExit.Load(); n < 1 {
				t.Fatalf("the caller ended with %d calls returned, want every started call (at least item 1) returned first", n)
			}
		})
	})
	t.Run("worker", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			oneEnded := make(chan struct{})
			_, err := group.Map(context.Background(), []int{0, 1}, 2, func(ctx context.Context, i int) (int, error) {
				if i == 1 {
					defer close(oneEnded)
					runtime.Goexit()
				}
				<-oneEnded // item 0, in the caller, waits: item 1 is in a worker of its own
				return i, nil
			})
			if !errors.Is(err, group.ErrGoexit) {
				t.Fatalf("Map = %v, want ErrGoexit", err)
			}
		})
	})
}
