package group_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ctxsync/ctxsync/group"
)

// New starts a group; its ctx ends for every task as soon as one fails, and
// Wait returns that first error.
func ExampleNew() {
	g, ctx := group.New(context.Background(), group.Options{})
	g.Go(func(ctx context.Context) error {
		<-ctx.Done() // a long job that listens to ctx
		return ctx.Err()
	})
	g.Go(func(ctx context.Context) error {
		return errors.New("disk full")
	})
	fmt.Println("Wait:", g.Wait())
	fmt.Println("cause:", context.Cause(ctx))
	// Output:
	// Wait: disk full
	// cause: disk full
}

// With a Limit, Go waits for a slot: here at most two tasks run at once.
func ExampleGroup_Go() {
	g, _ := group.New(context.Background(), group.Options{Limit: 2})
	var mu sync.Mutex
	var done []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		if err := g.Go(func(ctx context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			done = append(done, strings.ToUpper(name))
			return nil
		}); err != nil {
			break // the group's ctx ended: no task would start
		}
	}
	if err := g.Wait(); err != nil {
		fmt.Println(err)
	}
	slices.Sort(done)
	fmt.Println(done)
	// Output: [A B C D E]
}

// TryGo starts a task only if a slot is free now: a way to shed load.
func ExampleGroup_TryGo() {
	g, _ := group.New(context.Background(), group.Options{Limit: 1})
	release := make(chan struct{})
	fmt.Println("first:", g.TryGo(func(context.Context) error { <-release; return nil }))
	fmt.Println("second:", g.TryGo(func(context.Context) error { return nil }))
	close(release)
	g.Wait()
	// Output:
	// first: true
	// second: false
}

// With CollectAll, every task runs to its end, and Wait joins every error.
func ExampleGroup_Wait() {
	g, _ := group.New(context.Background(), group.Options{CollectAll: true, Limit: 1})
	for _, name := range []string{"alpha", "beta", "gamma"} {
		g.Go(func(ctx context.Context) error {
			if name == "beta" {
				return nil
			}
			return fmt.Errorf("%s failed", name)
		})
	}
	fmt.Println(g.Wait())
	// Output:
	// alpha failed
	// gamma failed
}

// Map returns the results in the items' order, whatever order they finish in.
func ExampleMap() {
	words := []string{"map", "keeps", "order"}
	lengths, err := group.Map(context.Background(), words, 2, func(ctx context.Context, w string) (int, error) {
		return len(w), nil
	})
	fmt.Println(lengths, err)
	// Output: [3 5 5] <nil>
}

// MapAll runs every item and reports every error at its item's index.
func ExampleMapAll() {
	ids := []int{1, 2, 3, 4}
	names, errs := group.MapAll(context.Background(), ids, 0, func(ctx context.Context, id int) (string, error) {
		if id%2 == 0 {
			return "", fmt.Errorf("user %d not found", id)
		}
		return fmt.Sprintf("user-%d", id), nil
	})
	for i := range ids {
		if errs != nil && errs[i] != nil {
			fmt.Println(i, "error:", errs[i])
			continue
		}
		fmt.Println(i, names[i])
	}
	// Output:
	// 0 user-1
	// 1 error: user 2 not found
	// 2 user-3
	// 3 error: user 4 not found
}

// ForEach pulls items from an iterator only as slots free up, so it can
// process a stream that never ends; the first error stops it.
func ExampleForEach() {
	naturals := func(yield func(int) bool) {
		for n := 1; ; n++ {
			if !yield(n) {
				return
			}
		}
	}
	errTooBig := errors.New("too big")
	err := group.ForEach(context.Background(), naturals, 4, func(ctx context.Context, n int) error {
		if n == 100 {
			return errTooBig
		}
		return nil
	})
	fmt.Println(err)
	// Output: too big
}

// A panic in a task comes back out of Wait, in the caller's goroutine, as a
// *PanicError carrying the value and the task's stack.
func ExamplePanicError() {
	defer func() {
		p := recover().(*group.PanicError)
		fmt.Println("recovered:", p.Value)
		fmt.Println("stack names the task:", strings.Contains(string(p.Stack), "ExamplePanicError"))
	}()
	g, _ := group.New(context.Background(), group.Options{})
	g.Go(func(ctx context.Context) error {
		var items []string
		fmt.Println(items[len(items)-1]) // a bug: the last of no items
		return nil
	})
	g.Wait()
	// Output:
	// recovered: runtime error: index out of range [-1]
	// stack names the task: true
}

// Options choose between failing fast (the default) and collecting every
// error, and bound the tasks running at once.
func ExampleOptions() {
	for _, opts := range []group.Options{{Limit: 1}, {Limit: 1, CollectAll: true}} {
		g, _ := group.New(context.Background(), opts)
		ran := 0
		for i := range 3 {
			g.Go(func(ctx context.Context) error {
				ran++ // Limit 1: one task at a time
				return fmt.Errorf("task %d failed", i)
			})
		}
		err := g.Wait()
		fmt.Printf("CollectAll %v: %d ran; Wait: %q\n", opts.CollectAll, ran, err)
	}
	// Output:
	// CollectAll false: 1 ran; Wait: "task 0 failed"
	// CollectAll true: 3 ran; Wait: "task 0 failed\ntask 1 failed\ntask 2 failed"
}
