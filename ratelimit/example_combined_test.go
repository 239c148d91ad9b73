package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// An API that allows 3 calls a second and 5 a minute: All grants a call only
// when both limits have room, and a refused call takes from neither.
func ExampleAll() {
	perSecond := ratelimit.NewTokenBucket(3, 3)
	perMinute := ratelimit.NewSlidingWindow(5, time.Minute)
	api := ratelimit.All(perSecond, perMinute)

	fmt.Println(api.AllowN(3))                          // both have room
	fmt.Println(api.AllowN(1))                          // the bucket is empty: refused, the window keeps its room
	fmt.Println(perMinute.AllowN(2), perMinute.Allow()) // exactly 2 were left this minute

	// A wait that the minute's limit puts past the deadline fails at once.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	fmt.Println(api.WaitN(ctx, 3))
	fmt.Println(api.WaitN(ctx, 4)) // more than the per-second burst
	// Output:
	// true
	// false
	// true false
	// ratelimit: wait would exceed the context deadline: context deadline exceeded
	// ratelimit: n exceeds the limiter's burst
}
