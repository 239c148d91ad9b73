package ctxsync_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/ctxsync/ctxsync"
)

// An Event tells any number of goroutines that something has happened: here,
// that the configuration is loaded.
func ExampleEvent() {
	var loaded ctxsync.Event // the zero value is unset and ready
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			if err := loaded.Wait(context.Background()); err == nil {
				_ = i // serve requests with the configuration
			}
		})
	}
	loaded.Set() // every waiter wakes
	wg.Wait()
	fmt.Println("all workers saw the configuration:", loaded.IsSet())
	// Output: all workers saw the configuration: true
}

func ExampleNewEvent() {
	e := ctxsync.NewEvent()
	fmt.Println(e.IsSet())
	e.Set()
	e.Set() // already set: nothing happens
	fmt.Println(e.IsSet())
	e.Clear()
	fmt.Println(e.IsSet())
	// Output:
	// false
	// true
	// false
}

// Done lets a goroutine wait for an Event and for other channels at once.
func ExampleEvent_Done() {
	shutdown := ctxsync.NewEvent()
	jobs := make(chan int)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case j := <-jobs:
				fmt.Println("job", j)
			case <-shutdown.Done():
				fmt.Println("shutting down")
				return
			}
		}
	}()
	jobs <- 1
	jobs <- 2
	shutdown.Set()
	<-finished
	// Output:
	// job 1
	// job 2
	// shutting down
}
