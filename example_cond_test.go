package ctxsync_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ctxsync/ctxsync"
)

// A Condition lets a goroutine wait for a change of state that other
// goroutines make under the same Lock, and give up when its context ends.
func ExampleCondition() {
	c := ctxsync.NewCondition(nil)
	var queue []string // guarded by c

	go func() {
		_ = c.Lock(context.Background())
		queue = append(queue, "hello")
		c.Notify(1)
		c.Unlock()
	}()

	_ = c.Lock(context.Background())
	defer c.Unlock() // Wait always returns holding the Lock
	for len(queue) == 0 {
		if err := c.Wait(context.Background()); err != nil {
			return
		}
	}
	fmt.Println(queue[0])
	// Output: hello
}

// Two Conditions on one Lock wait for different changes to the same state.
func ExampleNewCondition() {
	l := ctxsync.NewLock()
	notEmpty := ctxsync.NewCondition(l)
	notFull := ctxsync.NewCondition(l)
	fmt.Println(notEmpty.Waiting(), notFull.Waiting())
	// Output: 0 0
}

// WaitFor loops until the predicate holds, or the context ends.
func ExampleCondition_WaitFor() {
	c := ctxsync.NewCondition(nil)
	ready := false // guarded by c

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_ = c.Lock(context.Background())
	err := c.WaitFor(ctx, func() bool { return ready })
	fmt.Println(err, "- and the Lock is held:", c.Locked())
	c.Unlock()
	// Output: context deadline exceeded - and the Lock is held: true
}
