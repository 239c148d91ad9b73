package pool_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/pool"
)

// Hooks feed metrics: here, counters of acquires that waited and of
// resources closed, kept by the caller. The extra/ctxsyncprom and
// extra/ctxsyncotel modules fill them in for Prometheus and OpenTelemetry.
func ExampleHooks() {
	var waited, closed atomic.Int64
	var waitTime atomic.Int64
	p, err := pool.New(pool.Config[*client]{
		New:     func(context.Context) (*client, error) { return &client{}, nil },
		MaxSize: 1,
		Hooks: pool.Hooks{
			OnAcquire: func(e pool.AcquireEvent) {
				if e.Waited {
					waited.Add(1)
					waitTime.Add(int64(e.Wait))
				}
			},
			OnClose: func(reason pool.CloseReason) {
				closed.Add(1)
				fmt.Println("closed:", reason)
			},
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	r, _ := p.Acquire(ctx) // waits for New: the pool was empty
	r.Destroy()
	r, _ = p.Acquire(ctx) // waits again
	r.Release()
	r, _ = p.Acquire(ctx) // the idle one, at once
	r.Release()
	_ = p.Close(ctx)
	fmt.Println("acquires that waited:", waited.Load(), "closed:", closed.Load())
	fmt.Println("waited at all:", time.Duration(waitTime.Load()) > 0)
	// Output:
	// closed: destroy
	// closed: pool
	// acquires that waited: 2 closed: 2
	// waited at all: true
}

// AcquireEvent tells whether an Acquire waited, how long, and how it ended.
func ExampleAcquireEvent() {
	p, _ := pool.New(pool.Config[*client]{
		New:     func(context.Context) (*client, error) { return &client{}, nil },
		MaxSize: 1,
		Hooks: pool.Hooks{OnAcquire: func(e pool.AcquireEvent) {
			fmt.Println("waited:", e.Waited, "error:", e.Err)
		}},
	})
	r, _ := p.Acquire(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, _ = p.Acquire(ctx) // the pool is full: waits, then gives up
	r.Release()
	_ = p.Close(context.Background())
	// Output:
	// waited: true error: <nil>
	// waited: true error: context deadline exceeded
}

// CreateEvent tells how long each call to New took, and its error. The call
// runs in a goroutine of its own, which tells OnCreate once the Acquire it
// served has its answer: here, the example waits to hear of it.
func ExampleCreateEvent() {
	told := make(chan pool.CreateEvent, 1)
	p, _ := pool.New(pool.Config[*client]{
		New:     func(context.Context) (*client, error) { return nil, fmt.Errorf("backend down") },
		MaxSize: 1,
		Hooks:   pool.Hooks{OnCreate: func(e pool.CreateEvent) { told <- e }},
	})
	_, err := p.Acquire(context.Background())
	fmt.Println("acquire:", err)
	fmt.Println("create failed:", (<-told).Err)
	_ = p.Close(context.Background())
	// Output:
	// acquire: backend down
	// create failed: backend down
}

// Hooks made once, before the pools, serve several of them: each event
// carries the Name of the pool it comes from (Config.Name), as Stats does.
func ExampleHooks_shared() {
	var mu sync.Mutex
	acquires := map[string]int{}
	hooks := pool.Hooks{OnAcquire: func(e pool.AcquireEvent) {
		mu.Lock()
		acquires[e.Name]++
		mu.Unlock()
	}}
	newPool := func(name string) *pool.Pool[*client] {
		p, err := pool.New(pool.Config[*client]{
			Name:    name,
			New:     func(context.Context) (*client, error) { return &client{}, nil },
			MaxSize: 1,
			Hooks:   hooks,
		})
		if err != nil {
			panic(err)
		}
		return p
	}
	users, orders := newPool("users"), newPool("orders")
	ctx := context.Background()
	for _, p := range []*pool.Pool[*client]{users, orders, orders} {
		r, _ := p.Acquire(ctx)
		r.Release()
	}
	fmt.Println("users:", acquires["users"], "orders:", acquires["orders"])
	fmt.Println("stats of", orders.Stats().Name)
	_ = users.Close(ctx)
	_ = orders.Close(ctx)
	// Output:
	// users: 1 orders: 2
	// stats of orders
}
