package pool_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/pool"
)

// client stands for an expensive resource, such as a connection.
type client struct{ id int }

// A Pool lends resources out and takes them back; the warmest idle one is lent
// first.
func ExamplePool() {
	var made atomic.Int32
	p, err := pool.New(pool.Config[*client]{
		New: func(context.Context) (*client, error) {
			return &client{id: int(made.Add(1))}, nil
		},
		Close:   func(*client) error { return nil },
		MaxSize: 2,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	r, _ := p.Acquire(ctx)
	fmt.Println("acquired client", r.Value().id)
	r.Release()
	r, _ = p.Acquire(ctx)
	fmt.Println("acquired client", r.Value().id, "again")
	r.Release()

	fmt.Println(p.Close(ctx))
	_, err = p.Acquire(ctx)
	fmt.Println(err)
	// Output:
	// acquired client 1
	// acquired client 1 again
	// <nil>
	// pool: closed
}

// New checks the configuration.
func ExampleNew() {
	_, err := pool.New(pool.Config[*client]{
		New:     func(context.Context) (*client, error) { return &client{}, nil },
		MaxSize: 0,
	})
	fmt.Println(err)
	// Output: pool: bad Config: MaxSize is 0; it must be at least 1
}

// With is the common case: acquire, use, release.
func ExamplePool_With() {
	p, _ := pool.New(pool.Config[*client]{
		New:     func(context.Context) (*client, error) { return &client{id: 7}, nil },
		MaxSize: 1,
	})
	defer p.Close(context.Background())
	err := p.With(context.Background(), func(c *client) error {
		fmt.Println("using client", c.id)
		return nil
	})
	fmt.Println(err)
	// Output:
	// using client 7
	// <nil>
}

// A function given to With that finds its resource broken says so by
// wrapping ErrBroken in its error: the resource is closed, and the next call
// gets a new one. Config.Broken can decide otherwise, from the value and the
// error.
func ExamplePool_With_broken() {
	var made atomic.Int32
	p, _ := pool.New(pool.Config[*client]{
		New:     func(context.Context) (*client, error) { return &client{id: int(made.Add(1))}, nil },
		MaxSize: 1,
	})
	defer p.Close(context.Background())
	ctx := context.Background()
	err := p.With(ctx, func(c *client) error {
		return fmt.Errorf("client %d: read: connection reset: %w", c.id, pool.ErrBroken)
	})
	fmt.Println(err)
	_ = p.With(ctx, func(c *client) error {
		fmt.Println("next call on client", c.id)
		return nil
	})
	// Output:
	// client 1: read: connection reset: pool: resource broken
	// next call on client 2
}

// Destroy closes a resource found broken; the pool makes a new one when
// needed.
func ExampleResource_Destroy() {
	var made atomic.Int32
	p, _ := pool.New(pool.Config[*client]{
		New:     func(context.Context) (*client, error) { return &client{id: int(made.Add(1))}, nil },
		MaxSize: 1,
	})
	defer p.Close(context.Background())
	ctx := context.Background()
	r, _ := p.Acquire(ctx)
	r.Destroy() // say the call on it failed with a broken pipe
	r, _ = p.Acquire(ctx)
	fmt.Println("client", r.Value().id)
	r.Release()
	fmt.Println(p.Stats().ClosedDestroy)
	// Output:
	// client 2
	// 1
}

// A full pool makes Acquire wait, until a release or the context's end.
func ExamplePool_Acquire() {
	p, _ := pool.New(pool.Config[*client]{
		New:     func(context.Context) (*client, error) { return &client{}, nil },
		MaxSize: 1,
	})
	defer p.Close(context.Background())
	held, _ := p.Acquire(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := p.Acquire(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	held.Release()
	// Output: true
}

// Stats show what the pool has done.
func ExampleStats() {
	p, _ := pool.New(pool.Config[*client]{
		New:     func(context.Context) (*client, error) { return &client{}, nil },
		MaxSize: 4,
	})
	defer p.Close(context.Background())
	for range 3 {
		_ = p.With(context.Background(), func(*client) error { return nil })
	}
	s := p.Stats()
	fmt.Println(s.Idle, s.InUse, s.Created, s.AcquireCount)
	// Output: 1 0 1 3
}

// Config's zero fields are defaults or off; here a pool that renews its
// resources and keeps two ready.
func ExampleConfig() {
	cfg := pool.Config[*client]{
		New:         func(context.Context) (*client, error) { return &client{}, nil },
		Close:       func(*client) error { return nil },
		HealthCheck: func(context.Context, *client) error { return nil },
		MaxSize:     8,
		MinIdle:     2,
		MaxIdleTime: 5 * time.Minute,
		MaxLifetime: time.Hour,
		OnLeak:      func(l pool.Leak) { fmt.Println("held for", l.Held, "from", l.Stack) },
		// LeakThreshold: time.Minute, to report resources held too long.
	}
	p, err := pool.New(cfg)
	fmt.Println(err)
	p.Close(context.Background())
	// Output: <nil>
}

// A Leak tells who forgot to release a resource.
func ExampleLeak() {
	report := func(l pool.Leak) {
		fmt.Printf("a resource has been held for %v; acquired at:\n%s", l.Held, l.Stack)
	}
	_ = pool.Config[*client]{LeakThreshold: time.Minute, OnLeak: report}
	fmt.Println("configured")
	// Output: configured
}
