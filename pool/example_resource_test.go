package pool_test

import (
	"context"
	"fmt"

	"github.com/ctxsync/ctxsync/pool"
)

// A Resource is held by the pointer Acquire returns, used through Value, and
// given back once, by Release (or Destroy), from any goroutine: here the
// goroutine that finishes the work, not the one that acquired it.
func ExampleResource() {
	p, err := pool.New(pool.Config[*client]{
		New:     func(context.Context) (*client, error) { return &client{id: 1}, nil },
		MaxSize: 1,
	})
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())

	r, err := p.Acquire(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("acquired client", r.Value().id, "made at a known time:", !r.CreatedAt().IsZero())
	done := make(chan struct{})
	go func() { // the work, and the resource with it, goes to another goroutine
		defer close(done)
		defer r.Release() // exactly once; r is not to be touched after
		fmt.Println("worker uses client", r.Value().id)
	}()
	<-done
	fmt.Println("in use:", p.Stats().InUse)
	// Output:
	// acquired client 1 made at a known time: true
	// worker uses client 1
	// in use: 0
}
