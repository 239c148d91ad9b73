package ctxsync_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/ctxsync/ctxsync"
)

// A Lock guards shared state like a sync.Mutex, and a goroutine waiting for it
// can give up when its context ends.
func ExampleLock() {
	var (
		mu      ctxsync.Lock // the zero value is ready to use
		balance = 100
		wg      sync.WaitGroup
	)
	for range 10 {
		wg.Go(func() {
			if err := mu.Lock(context.Background()); err != nil {
				return
			}
			defer mu.Unlock()
			balance += 10
		})
	}
	wg.Wait()
	fmt.Println("balance:", balance)
	// Output: balance: 200
}

func ExampleNewLock() {
	l := ctxsync.NewLock()
	fmt.Println(l.TryLock(), l.TryLock())
	l.Unlock()
	fmt.Println(l.Locked())
	// Output:
	// true false
	// false
}

// A waiter whose context ends leaves the queue with ctx.Err(); the lock is
// unchanged.
func ExampleLock_Lock() {
	var l ctxsync.Lock
	_ = l.Lock(context.Background()) // someone holds it

	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error)
	go func() { result <- l.Lock(ctx) }()
	cancel() // the caller gave up, say its request was abandoned
	fmt.Println(<-result)
	fmt.Println("still held by the first owner:", l.Locked())
	l.Unlock()
	// Output:
	// context canceled
	// still held by the first owner: true
}
