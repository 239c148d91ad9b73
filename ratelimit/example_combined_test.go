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

// Per client, 2 requests a second and 3 a minute: a Keyed of Combined limits.
func ExampleAll_perKey() {
	perClient := ratelimit.NewKeyed(func(string) *ratelimit.Combined {
		return ratelimit.All(
			ratelimit.NewTokenBucket(2, 2),
			ratelimit.NewSlidingWindow(3, time.Minute),
		)
	}, ratelimit.KeyedConfig{})
	fmt.Println(perClient.AllowN("alice", 2), perClient.Allow("alice"), perClient.Allow("bob"))
	d := perClient.Take("alice", 1)
	fmt.Println(d.Allowed, d.Remaining, d.RetryAfter <= 500*time.Millisecond) // the bucket's next token
	// Output:
	// true false true
	// false 0 true
}
