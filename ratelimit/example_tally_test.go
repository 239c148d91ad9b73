package ratelimit_test

import (
	"fmt"
	"time"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// A Tally counts the decisions of the limiters it wraps: one Tally shared by
// every key's limiter counts for the whole Keyed, with no label per key.
func ExampleTally() {
	var tally ratelimit.Tally
	perUser := ratelimit.NewKeyed(func(string) ratelimit.Taker {
		return tally.Wrap(ratelimit.NewTokenBucket(1, 2))
	}, ratelimit.KeyedConfig{TTL: time.Hour})
	for _, user := range []string{"ann", "ann", "ann", "bob"} {
		perUser.Allow(user)
	}
	c := tally.Counts()
	fmt.Println("allowed:", c.Allowed, "refused:", c.Refused)
	// Output:
	// allowed: 3 refused: 1
}
