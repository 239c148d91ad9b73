package ctxsync_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/ctxsync/ctxsync"
)

// A Flight runs one load per key at a time, and a caller that gives up
// leaves without failing the others: here a second caller, whose request was
// abandoned, gets its ctx's error at once, and the load goes on for the
// first.
func ExampleFlight() {
	var loads ctxsync.Flight[string, string] // the zero value is ready to use
	started, release := make(chan struct{}), make(chan struct{})
	load := func(ctx context.Context) (string, error) {
		close(started)
		select {
		case <-release:
			return "profile of alice", nil
		case <-ctx.Done(): // every caller left: nobody wants it any more
			return "", ctx.Err()
		}
	}

	first := make(chan string)
	go func() {
		v, err, shared := loads.Do(context.Background(), "alice", load)
		first <- fmt.Sprintf("first caller: %q, %v, shared %v", v, err, shared)
	}()
	<-started
	fmt.Println("calls in flight:", loads.Len())

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the second caller's request was abandoned
	_, err, _ := loads.Do(ctx, "alice", load)
	fmt.Println("second caller:", err)

	close(release)
	fmt.Println(<-first)
	fmt.Println("calls in flight:", loads.Len())
	// Output:
	// calls in flight: 1
	// second caller: context canceled
	// first caller: "profile of alice", <nil>, shared false
	// calls in flight: 0
}

// A panic in fn comes back out of Do in the caller's goroutine, as a
// *PanicError carrying the value and fn's stack.
func ExamplePanicError() {
	var f ctxsync.Flight[int, string]
	defer func() {
		p := recover().(*ctxsync.PanicError)
		fmt.Println("recovered:", p.Value)
		fmt.Println("stack names fn:", strings.Contains(string(p.Stack), "ExamplePanicError"))
		fmt.Println("the Flight is whole:", f.Len() == 0)
	}()
	f.Do(context.Background(), 1, func(context.Context) (string, error) {
		var names []string
		return names[len(names)-1], nil // a bug: the last of no names
	})
	// Output:
	// recovered: runtime error: index out of range [-1]
	// stack names fn: true
	// the Flight is whole: true
}

// Forget lets the next Do start a new call, for example after the data the
// call in flight reads has changed.
func ExampleFlight_Forget() {
	var f ctxsync.Flight[string, int]
	started, release := make(chan struct{}), make(chan struct{})
	old := make(chan int)
	go func() {
		v, _, _ := f.Do(context.Background(), "count", func(context.Context) (int, error) {
			close(started)
			<-release
			return 1, nil // read before the change
		})
		old <- v
	}()
	<-started
	f.Forget("count") // the data changed: a new read must not join the old one
	v, _, _ := f.Do(context.Background(), "count", func(context.Context) (int, error) { return 2, nil })
	fmt.Println("after Forget:", v)
	close(release)
	fmt.Println("the old call's caller:", <-old)
	// Output:
	// after Forget: 2
	// the old call's caller: 1
}
