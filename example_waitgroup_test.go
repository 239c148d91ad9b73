package ctxsync_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync"
)

// A WaitGroup waits for goroutines as sync.WaitGroup does, and its Wait can
// give up: a request handler stops waiting for stragglers when its deadline
// passes, and leaves no goroutine behind.
func ExampleWaitGroup() {
	var (
		wg     ctxsync.WaitGroup // the zero value is ready to use
		copies atomic.Int32
	)
	for range 3 {
		wg.Go(func() { copies.Add(1) }) // a replica that answers at once
	}
	if err := wg.Wait(context.Background()); err != nil {
		fmt.Println("gave up:", err)
		return
	}
	fmt.Println("replicas written:", copies.Load())
	// Output: replicas written: 3
}

// Wait returns ctx.Err() when its context ends first; the goroutines go on,
// and a later Wait finds them done.
func ExampleWaitGroup_Wait() {
	var wg ctxsync.WaitGroup
	release := make(chan struct{})
	wg.Go(func() { <-release }) // a slow task

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	fmt.Println(wg.Wait(ctx), wg.Count())

	close(release)
	fmt.Println(wg.Wait(context.Background()), wg.Count())
	// Output:
	// context deadline exceeded 1
	// <nil> 0
}
