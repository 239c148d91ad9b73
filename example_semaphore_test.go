package ctxsync_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ctxsync/ctxsync"
)

// A Semaphore bounds how many goroutines do something at once: here, at most
// two of eight downloads run together.
func ExampleSemaphore() {
	sem := ctxsync.NewSemaphore(2)
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := sem.Acquire(context.Background()); err != nil {
				return
			}
			defer sem.Release()
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			running.Add(-1)
		})
	}
	wg.Wait()
	fmt.Println("never more than 2 at once:", most.Load() <= 2)
	fmt.Println("free permits:", sem.Available())
	// Output:
	// never more than 2 at once: true
	// free permits: 2
}

// With no permits at first, a Semaphore is a counter of events that waiters
// consume.
func ExampleNewSemaphore() {
	events := ctxsync.NewSemaphore(0)
	go func() {
		events.Release()
		events.Release()
	}()
	for range 2 {
		if err := events.Acquire(context.Background()); err == nil {
			fmt.Println("event")
		}
	}
	// Output:
	// event
	// event
}

// A BoundedSemaphore catches a Release without an Acquire: a bug that would
// otherwise let one goroutine too many through, later, far from the mistake.
func ExampleBoundedSemaphore() {
	sem := ctxsync.NewBoundedSemaphore(1)
	defer func() {
		if err, ok := recover().(error); ok && errors.Is(err, ctxsync.ErrReleasedTooManyTimes) {
			fmt.Println("caught:", err)
		}
	}()
	_ = sem.Acquire(context.Background())
	sem.Release()
	sem.Release() // one too many
	// Output: caught: ctxsync: BoundedSemaphore released too many times
}

func ExampleNewBoundedSemaphore() {
	sem := ctxsync.NewBoundedSemaphore(3)
	fmt.Println(sem.TryAcquire(), sem.Available())
	sem.Release()
	fmt.Println(sem.Available())
	// Output:
	// true 2
	// 3
}
