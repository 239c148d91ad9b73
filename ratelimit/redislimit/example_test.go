package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/ratelimit/redislimit"
)

// Every instance of a service that makes such a Limiter, on the same Redis,
// shares its limit: here 2 calls per second, bursts of 3, per API key.
func ExampleLimiter() {
	srv := miniredis.NewMiniRedis() // in a real service: your Redis
	_ = srv.Start()
	defer srv.Close()
	// The bucket fills on Redis's clock: stopped here, so that the output
	// is the same however slowly the calls come.
	srv.SetTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	// Timeout bounds each call's wait for Redis; the default, 100 ms, suits
	// a server nearby and not loaded.
	l, err := redislimit.New(redislimit.Config{Client: client, Rate: 2, Burst: 3, Timeout: time.Second})
	if err != nil {
		panic(err)
	}
	for i := range 4 {
		d, err := l.TakeContext(context.Background(), "api-key-42", 1)
		fmt.Println(i, d.Allowed, d.Remaining, err)
	}
	// Output:
	// 0 true 2 <nil>
	// 1 true 1 <nil>
	// 2 true 0 <nil>
	// 3 false 0 <nil>
}

// When Redis does not answer in time, the Policy decides, and the error says
// why.
func ExampleNew() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // nothing listens
	defer client.Close()
	l, _ := redislimit.New(redislimit.Config{
		Client:  client,
		Rate:    100,
		Burst:   10,
		Timeout: 50 * time.Millisecond,
		Policy:  redislimit.FailLocal, // an in-process bucket per key meanwhile
	})
	d, err := l.TakeContext(context.Background(), "k", 1)
	fmt.Println(d.Allowed, errors.Is(err, redislimit.ErrUnavailable))
	// Output: true true
}

// A Handle, from For, limits one key; any code that takes a
// ratelimit.Limiter accepts it.
func ExampleHandle() {
	srv := miniredis.NewMiniRedis()
	_ = srv.Start()
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	l, _ := redislimit.New(redislimit.Config{Client: client, Rate: 1, Burst: 2, Timeout: time.Second})

	var upstream ratelimit.Limiter = l.For("upstream-api")
	fmt.Println(upstream.AllowN(2), upstream.AllowN(1))
	// Output: true false
}

func ExamplePolicy() {
	fmt.Println(redislimit.FailOpen, redislimit.FailClosed, redislimit.FailLocal)
	// Output: fail-open fail-closed fail-local
}

// A Config for a limit that must never be exceeded, even while Redis is down.
// Redis must keep its keys too (see the package doc): run it with
// maxmemory-policy noeviction and appendonly yes, appendfsync always.
func ExampleConfig() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // nothing listens
	defer client.Close()
	l, _ := redislimit.New(redislimit.Config{
		Client:  client,
		Rate:    10,
		Burst:   10,
		Prefix:  "payments:",
		Timeout: 20 * time.Millisecond,
		Policy:  redislimit.FailClosed,
	})
	d, _ := l.TakeContext(context.Background(), "merchant-7", 1)
	fmt.Println(d.Allowed, l.Key("merchant-7"), l.Failures())
	// Output: false payments:{merchant-7} 1
}

// An API that allows 350 calls per 10 seconds and 10,000 per hour: both
// limits are checked and taken in one script, one round trip, and a call one
// of them refuses takes nothing from the other.
func ExampleConfig_limits() {
	srv := miniredis.NewMiniRedis()
	_ = srv.Start()
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	l, err := redislimit.New(redislimit.Config{
		Client: client,
		Rate:   35, Burst: 350, // 350 per 10 s
		Limits:  []redislimit.Limit{{Rate: 10000.0 / 3600, Burst: 10000}}, // and 10,000 per hour
		Timeout: time.Second,                                              // the default, 100 ms, suits a server nearby and not loaded
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	d, _ := l.TakeContext(ctx, "api-key-42", 300)
	fmt.Println(d.Allowed, d.Remaining, d.Limit)
	d, _ = l.TakeContext(ctx, "api-key-42", 100) // more than the 10 s limit has left
	fmt.Println(d.Allowed, d.Limit)
	// Output:
	// true 50 350
	// false 350
}
