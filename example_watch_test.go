package ctxsync_test

import (
	"context"
	"fmt"

	"github.com/ctxsync/ctxsync"
)

// A Watch publishes the latest configuration; a worker ranges over Changes to
// pick up each new one, and ends when the Watch is closed.
func ExampleWatch() {
	type config struct{ workers int }
	cfg := ctxsync.NewWatch(config{workers: 2})

	seen := make(chan int)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range cfg.Changes(context.Background()) {
			seen <- c.workers
		}
	}()
	fmt.Println("workers:", <-seen) // the current value comes first
	cfg.Store(config{workers: 4})
	fmt.Println("workers:", <-seen)
	cfg.Store(config{workers: 8})
	cfg.Close() // the value stored before Close still reaches the worker
	fmt.Println("workers:", <-seen)
	<-done // the loop has ended
	fmt.Println("watch closed")
	// Output:
	// workers: 2
	// workers: 4
	// workers: 8
	// watch closed
}

// Wait with the version last seen returns at once if a Store came since, and
// otherwise waits for the next one.
func ExampleWatch_Wait() {
	leader := ctxsync.NewWatch("node-a")
	addr, ver := leader.Load()
	fmt.Println(addr, ver)

	leader.Store("node-b") // before the Wait: not missed
	addr, ver, err := leader.Wait(context.Background(), ver)
	fmt.Println(addr, ver, err)

	leader.Close()
	_, _, err = leader.Wait(context.Background(), ver)
	fmt.Println(err == ctxsync.ErrClosed)
	// Output:
	// node-a 1
	// node-b 2 <nil>
	// true
}

func ExampleNewWatch() {
	flag := ctxsync.NewWatch(false)
	on, ver := flag.Load()
	fmt.Println(on, ver)
	flag.Store(true)
	on, ver = flag.Load()
	fmt.Println(on, ver)

	var zero ctxsync.Watch[int] // the zero Watch holds 0 at version 1
	fmt.Println(zero.Load())
	// Output:
	// false 1
	// true 2
	// 0 1
}
