package group_test

import (
	"context"
	"runtime"
	"testing"
	"weak"

	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestQueuedTaskClosureNotKeptAlive: once its task has returned, a closure
// given to Go is not kept alive by the group, which lives on. When the queue
// of tasks waiting to start outgrew its first array, that array kept the
// first four closures, and what they held, for the life of the Group.
func TestQueuedTaskClosureNotKeptAlive(t *testing.T) {
	testutil.OneProcessor(t) // the tasks wait in the queue while Go is called
	g, _ := group.New(context.Background(), group.Options{})
	var ptrs []weak.Pointer[[1 << 16]byte]
	for range 8 {
		big := new([1 << 16]byte)
		ptrs = append(ptrs, weak.Make(big))
		g.Go(func(context.Context) error { big[0]++; return nil })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	kept := 0
	for _, p := range ptrs {
		if p.Value() != nil {
			kept++
		}
	}
	if kept != 0 {
		t.Errorf("%d of 8 task closures still alive after Wait and GC", kept)
	}
	runtime.KeepAlive(g)
}
