package ctxsync_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/ctxsync/ctxsync"
)

// A Barrier keeps workers in step: each phase starts only when every worker
// has finished the one before. The action runs once per phase.
func ExampleBarrier() {
	phase := 0
	b := ctxsync.NewBarrier(3, func() error {
		phase++
		fmt.Println("phase", phase, "done by all")
		return nil
	})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range 2 {
				// ... this worker's share of the phase ...
				if _, err := b.Wait(context.Background()); err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	// Output:
	// phase 1 done by all
	// phase 2 done by all
}

// A party that gives up breaks the barrier, so the others do not wait forever.
func ExampleNewBarrier() {
	b := ctxsync.NewBarrier(2, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // this party's request was abandoned
	_, err := b.Wait(ctx)
	fmt.Println(err, b.Broken())

	b.Abort()
	_, err = b.Wait(context.Background())
	fmt.Println(err, b.Broken())
	b.Reset()
	fmt.Println(b.Broken(), b.Parties())
	// Output:
	// context canceled false
	// ctxsync: broken barrier true
	// false 2
}
